//! Four nodes per AVX2 operation for [`ordinary_pair`]'s arithmetic, chosen at run time where
//! the CPU has AVX2 (`score_pairs` asks `is_x86_feature_detected!`). Every operation is the
//! scalar IEEE one lane by lane, as in `lanes`: the 256-bit add, subtract, multiply, divide and
//! min round each lane exactly as their 128-bit forms; no FMA (fusing would change rounding;
//! only "avx2" is enabled, and Rust never contracts `a * b + c` on its own).
//!
//! [`ordinary_pair`]: super::pairs::ordinary_pair

use super::pairs::CpuMemoryColumns;
use crate::framework::MAX_NODE_SCORE;

/// The scores of the leading multiple of four of `feasible` into `out` (as long as
/// `feasible`), as [`ordinary_pair`](super::pairs::ordinary_pair) gives them: the caller
/// checked that every row is ordinary and the pod's requests are in `[0, 2^52)`, so every lane
/// is in bounds (see there). Returns how many nodes were scored.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn ordinary_quads<const BALANCED: bool, const MOST: bool>(
    c: &CpuMemoryColumns<'_>,
    pod: [f64; 2],
    feasible: &[usize],
    out: &mut [i64],
) -> usize {
    use std::arch::x86_64::*;
    let one = _mm256_set1_pd(1.0);
    let half = _mm256_set1_pd(0.5);
    let max = _mm256_set1_pd(MAX_NODE_SCORE as f64);
    let sign = _mm256_set1_pd(-0.0);
    let (pod_cpu, pod_memory) = (_mm256_set1_pd(pod[0]), _mm256_set1_pd(pod[1]));
    // Every column cut to one length, so that one bounds check per index covers all four.
    let n = c.alloc_cpu.len();
    let (alloc_cpu, alloc_memory) = (&c.alloc_cpu[..n], &c.alloc_memory[..n]);
    let (requested_cpu, requested_memory) = (&c.requested_cpu[..n], &c.requested_memory[..n]);
    let mut done = 0;
    for (q, o) in feasible.chunks_exact(4).zip(out.chunks_exact_mut(4)) {
        // Slice indexing: an index past the columns panics, as in the paired path. (A macro,
        // not a closure: a closure does not inherit the target feature and is not inlined.)
        macro_rules! ld {
            ($col:expr) => {
                _mm256_set_pd($col[q[3]], $col[q[2]], $col[q[1]], $col[q[0]])
            };
        }
        let (ac, am) = (ld!(alloc_cpu), ld!(alloc_memory));
        let rc = _mm256_add_pd(ld!(requested_cpu), pod_cpu);
        let rm = _mm256_add_pd(ld!(requested_memory), pod_memory);
        let scores = if BALANCED {
            let fc = _mm256_min_pd(_mm256_div_pd(rc, ac), one);
            let fm = _mm256_min_pd(_mm256_div_pd(rm, am), one);
            let std = _mm256_andnot_pd(sign, _mm256_mul_pd(_mm256_sub_pd(fc, fm), half));
            _mm256_cvttpd_epi32(_mm256_mul_pd(_mm256_sub_pd(one, std), max))
        } else {
            let (nc, nm) = if MOST {
                (
                    _mm256_mul_pd(_mm256_min_pd(rc, ac), max),
                    _mm256_mul_pd(_mm256_min_pd(rm, am), max),
                )
            } else {
                // `capacity − requested`, or 0 where the request exceeds the capacity.
                let le_c = _mm256_cmp_pd::<_CMP_LE_OQ>(rc, ac);
                let le_m = _mm256_cmp_pd::<_CMP_LE_OQ>(rm, am);
                (
                    _mm256_mul_pd(_mm256_and_pd(_mm256_sub_pd(ac, rc), le_c), max),
                    _mm256_mul_pd(_mm256_and_pd(_mm256_sub_pd(am, rm), le_m), max),
                )
            };
            let qc = _mm256_cvttpd_epi32(_mm256_div_pd(nc, ac));
            let qm = _mm256_cvttpd_epi32(_mm256_div_pd(nm, am));
            _mm_srli_epi32::<1>(_mm_add_epi32(qc, qm))
        };
        // The scores are in [0, 100]: zero-extended to i64.
        let wide = _mm256_cvtepu32_epi64(scores);
        // SAFETY: `o` is four i64 (32 bytes), written unaligned.
        _mm256_storeu_si256(o.as_mut_ptr().cast(), wide);
        done += 4;
    }
    done
}
