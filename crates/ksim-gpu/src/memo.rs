//! Score memo: a node's score for a pod shape, kept until the node changes.
//!
//! In the FGD experiment one cycle changes one node (the one the pod binds to), yet every cycle
//! scores every feasible node, and pods of the same request shape arrive over and over (the
//! typical pods cover 95% of them). A score plugin whose score depends only on the node's GPUs,
//! its unrequested CPU and the pod's shape (CPU, GPUs, milli per GPU) can look the score up
//! here instead of recomputing it.
//!
//! An entry is valid while the node's GPU version (bumped by [`crate::state::GpuCluster`] on
//! every change of the node's GPUs) and its unrequested CPU are those the score was computed
//! for: both are compared exactly on every lookup, so a stale entry is never read whatever
//! happened to the node in between.

use rustc_hash::FxHashMap;

/// The part of a pod's request a memoized score may depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShapeKey {
    pub cpu: i64,
    pub count: u8,
    pub milli: u16,
}

/// One node's memoized score for one shape.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// The node's GPU version the score was computed at; 0 = empty (versions start at 1).
    version: u64,
    cpu_left: i64,
    score: i64,
}

/// At most this many shapes get a table (the openb pod lists have at most a few hundred
/// distinct shapes); further shapes are scored without the memo.
pub const MAX_SHAPES: usize = 4096;

/// Scores per (shape, node), one table of node entries per shape (allocated when the shape
/// is first seen, so a cycle walks its nodes through one contiguous table).
#[derive(Debug, Default)]
pub struct ScoreMemo {
    nodes: usize,
    shapes: FxHashMap<ShapeKey, u32>,
    tables: Vec<Vec<Entry>>,
}

impl ScoreMemo {
    pub fn new(nodes: usize) -> ScoreMemo {
        ScoreMemo {
            nodes,
            ..ScoreMemo::default()
        }
    }

    /// The shape's table index, `None` when the memo is full.
    pub fn shape(&mut self, key: ShapeKey) -> Option<u32> {
        if let Some(&i) = self.shapes.get(&key) {
            return Some(i);
        }
        if self.tables.len() >= MAX_SHAPES {
            return None;
        }
        let i = self.tables.len() as u32;
        self.tables.push(vec![Entry::default(); self.nodes]);
        self.shapes.insert(key, i);
        Some(i)
    }

    /// The score memoized for `slot` when the node is still at `version` with `cpu_left`.
    #[inline]
    pub fn get(&self, shape: u32, slot: usize, version: u64, cpu_left: i64) -> Option<i64> {
        let e = self.tables[shape as usize][slot];
        (e.version == version && e.cpu_left == cpu_left).then_some(e.score)
    }

    #[inline]
    pub fn put(&mut self, shape: u32, slot: usize, version: u64, cpu_left: i64, score: i64) {
        self.tables[shape as usize][slot] = Entry {
            version,
            cpu_left,
            score,
        };
    }

    /// Shapes with a table.
    pub fn shapes(&self) -> usize {
        self.tables.len()
    }
}
