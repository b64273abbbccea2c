//! Two-lane SIMD values for the paired scoring paths (SSE2 on x86-64, plain pairs elsewhere):
//! every operation is the scalar IEEE one, lane by lane.

/// Two `f64` lanes (SSE2 on x86-64; two plain values elsewhere). Every arithmetic operation
/// is the scalar IEEE one lane by lane; comparisons give a lane mask (all ones or zero).
#[derive(Clone, Copy)]
pub(super) struct F2(
    #[cfg(target_arch = "x86_64")] std::arch::x86_64::__m128d,
    #[cfg(not(target_arch = "x86_64"))] [f64; 2],
);

/// Two `i32` lanes (the low two of an SSE2 register on x86-64).
#[derive(Clone, Copy)]
pub(super) struct I2(
    #[cfg(target_arch = "x86_64")] std::arch::x86_64::__m128i,
    #[cfg(not(target_arch = "x86_64"))] [i32; 2],
);

// SAFETY (every `unsafe` block below): SSE2 is part of the x86-64 baseline, so these
// intrinsics are always available there; they take and return values, no pointers.
#[cfg(target_arch = "x86_64")]
impl F2 {
    #[inline(always)]
    pub(super) fn new(a: f64, b: f64) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_set_pd(b, a)) }
    }
    #[inline(always)]
    pub(super) fn splat(x: f64) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_set1_pd(x)) }
    }
    #[inline(always)]
    pub(super) fn ge(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_cmpge_pd(self.0, o.0)) }
    }
    #[inline(always)]
    pub(super) fn le(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_cmple_pd(self.0, o.0)) }
    }
    #[inline(always)]
    pub(super) fn lt(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_cmplt_pd(self.0, o.0)) }
    }
    /// Bitwise and: of two masks, or of a value and a mask (the value or +0).
    #[inline(always)]
    pub(super) fn and(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_and_pd(self.0, o.0)) }
    }
    /// Whether every lane of a mask is set.
    #[inline(always)]
    pub(super) fn all(self) -> bool {
        unsafe { std::arch::x86_64::_mm_movemask_pd(self.0) == 3 }
    }
    /// `f64::min` for operands that are not NaN.
    #[inline(always)]
    pub(super) fn min(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_min_pd(self.0, o.0)) }
    }
    #[inline(always)]
    pub(super) fn add(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_add_pd(self.0, o.0)) }
    }
    #[inline(always)]
    pub(super) fn sub(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_sub_pd(self.0, o.0)) }
    }
    #[inline(always)]
    pub(super) fn mul(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_mul_pd(self.0, o.0)) }
    }
    #[inline(always)]
    pub(super) fn div(self, o: F2) -> F2 {
        unsafe { F2(std::arch::x86_64::_mm_div_pd(self.0, o.0)) }
    }
    #[inline(always)]
    pub(super) fn abs(self) -> F2 {
        unsafe {
            use std::arch::x86_64::*;
            F2(_mm_andnot_pd(_mm_set1_pd(-0.0), self.0))
        }
    }
    /// Truncation toward zero, as `as i64` for lanes in the `i32` range (the callers' are in
    /// `[0, 100]`).
    #[inline(always)]
    pub(super) fn trunc(self) -> I2 {
        unsafe { I2(std::arch::x86_64::_mm_cvttpd_epi32(self.0)) }
    }
}

#[cfg(target_arch = "x86_64")]
impl I2 {
    #[inline(always)]
    pub(super) fn add(self, o: I2) -> I2 {
        unsafe { I2(std::arch::x86_64::_mm_add_epi32(self.0, o.0)) }
    }
    /// `>> 1` of lanes >= 0.
    #[inline(always)]
    pub(super) fn shr1(self) -> I2 {
        unsafe { I2(std::arch::x86_64::_mm_srli_epi32::<1>(self.0)) }
    }
    /// The two lanes, widened (they are >= 0: zero-extended).
    #[inline(always)]
    pub(super) fn to_i64(self) -> [i64; 2] {
        unsafe {
            use std::arch::x86_64::*;
            let wide = _mm_unpacklo_epi32(self.0, _mm_setzero_si128());
            let mut out = [0i64; 2];
            _mm_storeu_si128(out.as_mut_ptr().cast(), wide);
            out
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl F2 {
    #[inline(always)]
    pub(super) fn new(a: f64, b: f64) -> F2 {
        F2([a, b])
    }
    #[inline(always)]
    pub(super) fn splat(x: f64) -> F2 {
        F2([x, x])
    }
    #[inline(always)]
    pub(super) fn mask(a: bool, b: bool) -> F2 {
        let m = |x: bool| f64::from_bits(if x { u64::MAX } else { 0 });
        F2([m(a), m(b)])
    }
    #[inline(always)]
    pub(super) fn ge(self, o: F2) -> F2 {
        F2::mask(self.0[0] >= o.0[0], self.0[1] >= o.0[1])
    }
    #[inline(always)]
    pub(super) fn le(self, o: F2) -> F2 {
        F2::mask(self.0[0] <= o.0[0], self.0[1] <= o.0[1])
    }
    #[inline(always)]
    pub(super) fn lt(self, o: F2) -> F2 {
        F2::mask(self.0[0] < o.0[0], self.0[1] < o.0[1])
    }
    #[inline(always)]
    pub(super) fn and(self, o: F2) -> F2 {
        let b = |k: usize| f64::from_bits(self.0[k].to_bits() & o.0[k].to_bits());
        F2([b(0), b(1)])
    }
    #[inline(always)]
    pub(super) fn all(self) -> bool {
        self.0[0].to_bits() == u64::MAX && self.0[1].to_bits() == u64::MAX
    }
    #[inline(always)]
    pub(super) fn min(self, o: F2) -> F2 {
        F2([self.0[0].min(o.0[0]), self.0[1].min(o.0[1])])
    }
    #[inline(always)]
    pub(super) fn add(self, o: F2) -> F2 {
        F2([self.0[0] + o.0[0], self.0[1] + o.0[1]])
    }
    #[inline(always)]
    pub(super) fn sub(self, o: F2) -> F2 {
        F2([self.0[0] - o.0[0], self.0[1] - o.0[1]])
    }
    #[inline(always)]
    pub(super) fn mul(self, o: F2) -> F2 {
        F2([self.0[0] * o.0[0], self.0[1] * o.0[1]])
    }
    #[inline(always)]
    pub(super) fn div(self, o: F2) -> F2 {
        F2([self.0[0] / o.0[0], self.0[1] / o.0[1]])
    }
    #[inline(always)]
    pub(super) fn abs(self) -> F2 {
        F2([self.0[0].abs(), self.0[1].abs()])
    }
    #[inline(always)]
    pub(super) fn trunc(self) -> I2 {
        I2([self.0[0] as i32, self.0[1] as i32])
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl I2 {
    #[inline(always)]
    pub(super) fn add(self, o: I2) -> I2 {
        I2([self.0[0] + o.0[0], self.0[1] + o.0[1]])
    }
    #[inline(always)]
    pub(super) fn shr1(self) -> I2 {
        I2([self.0[0] >> 1, self.0[1] >> 1])
    }
    #[inline(always)]
    pub(super) fn to_i64(self) -> [i64; 2] {
        [self.0[0] as i64, self.0[1] as i64]
    }
}
