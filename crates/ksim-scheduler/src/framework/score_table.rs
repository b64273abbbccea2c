//! The table of a cycle's scores ([`ScoreTable`]): per Score plugin its raw and normalized
//! score of each feasible node ([`PluginScores`], a uniform score kept once), and the weighted
//! totals; with the range check and weighting passes `Framework::run_score_in` fills it with.

use std::borrow::Cow;

/// Whether any score is outside `[0, max]` (a negative one, as `u64`, is above it). A pass
/// of its own, with no multiply, so that it is vectorized.
#[inline]
pub(super) fn any_above(scores: &[i64], max: u64) -> bool {
    scores.iter().fold(false, |acc, &v| acc | (v as u64 > max))
}

/// `totals[k] += scores[k] * weight`, for scores already checked to lie in
/// `[0, MAX_NODE_SCORE]`. With a weight that fits 32 bits, both factors do, so the product is
/// the 32×32→64-bit multiply SSE2 has for two lanes at once (`pmuludq`), where a 64-bit
/// multiply keeps the loop scalar; the same products as `v * weight`.
#[inline]
pub(super) fn add_weighted(totals: &mut [i64], scores: &[i64], weight: i64) {
    if (0..=i64::from(u32::MAX)).contains(&weight) {
        let w = weight as u32 as u64;
        for (total, &v) in totals.iter_mut().zip(scores) {
            *total += ((v as u32 as u64) * w) as i64;
        }
    } else {
        for (total, &v) in totals.iter_mut().zip(scores) {
            *total += v * weight;
        }
    }
}

/// Scores of one plugin over the feasible nodes.
#[derive(Debug, Clone, Default)]
pub struct PluginScores {
    pub plugin: &'static str,
    pub weight: i64,
    /// Per feasible node, as the plugin scored it (empty when the score is uniform).
    pub(super) raw: Vec<i64>,
    /// After NormalizeScore, for a plugin that has it (otherwise `raw` is final and this is
    /// not filled: see [`PluginScores::normalized`]).
    pub(super) normalized: Vec<i64>,
    pub(super) has_normalized: bool,
    /// The same score on every node (the plugin's `uniform_score`): kept once instead of a
    /// vector per node, which a cycle over hundreds of nodes would write for nothing.
    pub(super) uniform: Option<Uniform>,
}

/// A plugin's score on every one of `len` nodes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Uniform {
    pub(super) raw: i64,
    /// The raw score for a plugin without NormalizeScore.
    pub(super) normalized: i64,
    pub(super) len: usize,
}

impl PluginScores {
    /// The number of nodes scored.
    pub fn len(&self) -> usize {
        match self.uniform {
            Some(u) => u.len,
            None => self.raw.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k`-th feasible node's score as the plugin gave it.
    pub fn raw_at(&self, k: usize) -> Option<i64> {
        match self.uniform {
            Some(u) => (k < u.len).then_some(u.raw),
            None => self.raw.get(k).copied(),
        }
    }

    /// The `k`-th feasible node's score after NormalizeScore (the raw score of a plugin
    /// without it).
    pub fn normalized_at(&self, k: usize) -> Option<i64> {
        match self.uniform {
            Some(u) => (k < u.len).then_some(u.normalized),
            None => self.normalized_slice().get(k).copied(),
        }
    }

    /// Per feasible node, as the plugin scored it.
    pub fn raw(&self) -> Cow<'_, [i64]> {
        match self.uniform {
            Some(u) => Cow::Owned(vec![u.raw; u.len]),
            None => Cow::Borrowed(&self.raw),
        }
    }

    /// Per feasible node, after NormalizeScore (the raw scores of a plugin without it).
    pub fn normalized(&self) -> Cow<'_, [i64]> {
        match self.uniform {
            Some(u) => Cow::Owned(vec![u.normalized; u.len]),
            None => Cow::Borrowed(self.normalized_slice()),
        }
    }

    /// The per-node normalized vector of a plugin whose score is not uniform.
    pub(super) fn normalized_slice(&self) -> &[i64] {
        if self.has_normalized {
            &self.normalized
        } else {
            &self.raw
        }
    }

    /// The `k`-th feasible node's normalized score times the plugin's weight: what it adds to
    /// the node's total (0 past the last node).
    pub fn weighted(&self, k: usize) -> i64 {
        self.normalized_at(k).unwrap_or(0) * self.weight
    }
}

/// All scores of a cycle; reused between cycles to avoid reallocating.
#[derive(Debug, Clone, Default)]
pub struct ScoreTable {
    pub plugins: Vec<PluginScores>,
    pub totals: Vec<i64>,
    /// Entries of earlier cycles, kept for their allocations.
    pub(super) spare: Vec<PluginScores>,
}

impl ScoreTable {
    pub fn clear(&mut self, n: usize) {
        self.spare.append(&mut self.plugins);
        self.totals.clear();
        self.totals.resize(n, 0);
    }
}

#[cfg(test)]
mod weighting_tests {
    use super::{add_weighted, any_above};

    #[test]
    fn weighting_adds_what_the_plain_multiply_adds() {
        let scores: Vec<i64> = (0..=100).chain([0, 7, 100, 55]).collect();
        for weight in [
            0,
            1,
            3,
            100,
            i64::from(u32::MAX),
            i64::from(u32::MAX) + 1,
            -2,
        ] {
            let mut totals: Vec<i64> = (0..scores.len() as i64).map(|k| k * 1000).collect();
            let want: Vec<i64> = totals
                .iter()
                .zip(&scores)
                .map(|(t, v)| t + v * weight)
                .collect();
            add_weighted(&mut totals, &scores, weight);
            assert_eq!(totals, want, "weight {weight}");
        }
    }

    #[test]
    fn a_score_outside_the_range_is_found_wherever_it_is() {
        assert!(!any_above(&[0, 100, 50], 100));
        assert!(!any_above(&[], 100));
        for bad in [101, -1, i64::MIN, i64::MAX] {
            for at in 0..5 {
                let mut scores = vec![100i64; 5];
                scores[at] = bad;
                assert!(any_above(&scores, 100), "{bad} at {at}");
            }
        }
    }
}
