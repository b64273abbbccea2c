//! Per-node resource columns (structure of arrays) kept by the [`Snapshot`]: what
//! NodeResourcesFit's Filter and the two resource scorers read of every sampled node, in
//! contiguous vectors indexed like [`Snapshot::nodes`], so that their batch paths run tight
//! loops over plain numbers instead of following a pointer per node.
//!
//! Derived data: [`NodeColumns::set`] copies one node's fields, and the snapshot calls it
//! (through `Snapshot::sync_columns`) after every change of a node's pods, requests or
//! allocatable; node additions, removals and reorders rebuild the whole table.
//!
//! [`Snapshot`]: crate::node_info::Snapshot
//! [`Snapshot::nodes`]: crate::node_info::Snapshot::nodes

use crate::node_info::{NodeFlags, NodeInfo};

/// One entry per snapshot node, in snapshot order.
///
/// The scorers' amounts are kept as `f64` (converted as `as f64` converts), the form their
/// float arithmetic takes: exact below 2^53, and the scorers check their bounds before
/// relying on it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeColumns {
    /// `allocatable.milli_cpu`.
    pub alloc_cpu: Vec<f64>,
    /// `allocatable.memory`.
    pub alloc_memory: Vec<f64>,
    /// `requested.milli_cpu`.
    pub requested_cpu: Vec<f64>,
    /// `requested.memory`.
    pub requested_memory: Vec<f64>,
    /// `non_zero_requested.milli_cpu`.
    pub non_zero_cpu: Vec<f64>,
    /// `non_zero_requested.memory`.
    pub non_zero_memory: Vec<f64>,
    /// `allocatable − requested` of cpu, memory and ephemeral storage, as Fit's Filter
    /// computes them (wrapping: what a release build's subtraction gives).
    pub free_cpu: Vec<i64>,
    pub free_memory: Vec<i64>,
    pub free_ephemeral_storage: Vec<i64>,
    /// `allocatable.allowed_pod_number − pods.len()`, saturating (so `> 0` exactly when the
    /// node has room for one more pod).
    pub free_pods: Vec<i64>,
    /// [`NodeInfo::flags`].
    pub flags: Vec<NodeFlags>,
    /// Per flag bit, how many entries of `flags` have it: their union without reading them
    /// ([`NodeColumns::flags_union`]).
    flag_counts: [u32; 8],
    /// How many rows are not [ordinary](NodeColumns::all_ordinary).
    unordinary: u32,
}

/// Capacities of an ordinary row are in `[1, ORDINARY_CAPACITY_LIMIT)`.
pub const ORDINARY_CAPACITY_LIMIT: i64 = 1 << 46;
/// Requested amounts of an ordinary row are in `[0, ORDINARY_REQUEST_LIMIT)`.
pub const ORDINARY_REQUEST_LIMIT: i64 = 1 << 52;

/// One node's entries, in the columns' order.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    alloc_cpu: f64,
    alloc_memory: f64,
    requested_cpu: f64,
    requested_memory: f64,
    non_zero_cpu: f64,
    non_zero_memory: f64,
    free_cpu: i64,
    free_memory: i64,
    free_ephemeral_storage: i64,
    free_pods: i64,
    flags: NodeFlags,
}

impl Row {
    /// See [`NodeColumns::all_ordinary`]. Conversion to `f64` is monotonic and exact at the
    /// bounds (powers of two), so the bounds read the same on the converted amounts.
    fn ordinary(&self) -> bool {
        let capacity = |x: f64| (1.0..ORDINARY_CAPACITY_LIMIT as f64).contains(&x);
        let request = |x: f64| (0.0..ORDINARY_REQUEST_LIMIT as f64).contains(&x);
        capacity(self.alloc_cpu)
            && capacity(self.alloc_memory)
            && request(self.requested_cpu)
            && request(self.requested_memory)
            && request(self.non_zero_cpu)
            && request(self.non_zero_memory)
    }

    fn of(n: &NodeInfo) -> Row {
        let (a, r) = (&n.allocatable, &n.requested);
        Row {
            alloc_cpu: a.milli_cpu as f64,
            alloc_memory: a.memory as f64,
            requested_cpu: r.milli_cpu as f64,
            requested_memory: r.memory as f64,
            non_zero_cpu: n.non_zero_requested.milli_cpu as f64,
            non_zero_memory: n.non_zero_requested.memory as f64,
            free_cpu: a.milli_cpu.wrapping_sub(r.milli_cpu),
            free_memory: a.memory.wrapping_sub(r.memory),
            free_ephemeral_storage: a.ephemeral_storage.wrapping_sub(r.ephemeral_storage),
            free_pods: a
                .allowed_pod_number
                .saturating_sub(i64::try_from(n.pods.len()).unwrap_or(i64::MAX)),
            flags: n.flags(),
        }
    }
}

impl NodeColumns {
    /// The columns of `nodes`.
    pub fn of(nodes: &[NodeInfo]) -> NodeColumns {
        let mut c = NodeColumns::default();
        c.rebuild(nodes);
        c
    }

    /// Rewrites every column from `nodes` (reusing the allocations).
    pub fn rebuild(&mut self, nodes: &[NodeInfo]) {
        self.truncate(0);
        for n in nodes {
            self.push(Row::of(n));
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.flags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// Copies node `i`'s fields from `n` (the snapshot's `nodes[i]`). A no-op when `i` is
    /// past the end (cannot happen while the snapshot keeps the table whole).
    #[inline]
    pub fn set(&mut self, i: usize, n: &NodeInfo) {
        if i >= self.len() {
            return;
        }
        let r = Row::of(n);
        let was_ordinary = self.row(i).ordinary();
        if was_ordinary != r.ordinary() {
            self.count_ordinary(was_ordinary, false);
            self.count_ordinary(r.ordinary(), true);
        }
        self.alloc_cpu[i] = r.alloc_cpu;
        self.alloc_memory[i] = r.alloc_memory;
        self.requested_cpu[i] = r.requested_cpu;
        self.requested_memory[i] = r.requested_memory;
        self.non_zero_cpu[i] = r.non_zero_cpu;
        self.non_zero_memory[i] = r.non_zero_memory;
        self.free_cpu[i] = r.free_cpu;
        self.free_memory[i] = r.free_memory;
        self.free_ephemeral_storage[i] = r.free_ephemeral_storage;
        self.free_pods[i] = r.free_pods;
        let before = std::mem::replace(&mut self.flags[i], r.flags);
        if before != r.flags {
            self.count_flags(before, false);
            self.count_flags(r.flags, true);
        }
    }

    /// The union of every node's flags (from the per-bit counts, not a pass over `flags`).
    #[inline]
    pub fn flags_union(&self) -> NodeFlags {
        let mut bits = 0u8;
        for (b, &n) in self.flag_counts.iter().enumerate() {
            if n > 0 {
                bits |= 1 << b;
            }
        }
        NodeFlags::from_bits(bits)
    }

    /// Whether every row is ordinary: capacities in `[1, 2^46)`, requested and non-zero
    /// requested amounts in `[0, 2^52)` (every real node). The scorers' packed paths then
    /// skip their per-node bounds checks.
    #[inline]
    pub fn all_ordinary(&self) -> bool {
        self.unordinary == 0
    }

    /// Counts (`add`) or uncounts a row that is not ordinary (`ordinary` false).
    fn count_ordinary(&mut self, ordinary: bool, add: bool) {
        if !ordinary {
            // Never below zero, as for `flag_counts`.
            self.unordinary = if add {
                self.unordinary + 1
            } else {
                self.unordinary.saturating_sub(1)
            };
        }
    }

    /// Counts (`add`) or uncounts one entry's flags in `flag_counts`.
    fn count_flags(&mut self, f: NodeFlags, add: bool) {
        let bits = f.bits();
        for (b, n) in self.flag_counts.iter_mut().enumerate() {
            if bits & (1 << b) != 0 {
                // Never below zero: an entry is uncounted only when it leaves or changes,
                // after it was counted.
                *n = if add { *n + 1 } else { n.saturating_sub(1) };
            }
        }
    }

    /// Whether node `i`'s entries are `n`'s fields (what the batch paths assert in debug
    /// builds for each node they read).
    pub fn matches(&self, i: usize, n: &NodeInfo) -> bool {
        i < self.len() && self.row(i) == Row::of(n)
    }

    /// Whether the table is exactly the columns of `nodes`.
    pub fn matches_all(&self, nodes: &[NodeInfo]) -> bool {
        self.len() == nodes.len() && nodes.iter().enumerate().all(|(i, n)| self.matches(i, n))
    }

    fn row(&self, i: usize) -> Row {
        Row {
            alloc_cpu: self.alloc_cpu[i],
            alloc_memory: self.alloc_memory[i],
            requested_cpu: self.requested_cpu[i],
            requested_memory: self.requested_memory[i],
            non_zero_cpu: self.non_zero_cpu[i],
            non_zero_memory: self.non_zero_memory[i],
            free_cpu: self.free_cpu[i],
            free_memory: self.free_memory[i],
            free_ephemeral_storage: self.free_ephemeral_storage[i],
            free_pods: self.free_pods[i],
            flags: self.flags[i],
        }
    }

    fn push(&mut self, r: Row) {
        self.count_ordinary(r.ordinary(), true);
        self.alloc_cpu.push(r.alloc_cpu);
        self.alloc_memory.push(r.alloc_memory);
        self.requested_cpu.push(r.requested_cpu);
        self.requested_memory.push(r.requested_memory);
        self.non_zero_cpu.push(r.non_zero_cpu);
        self.non_zero_memory.push(r.non_zero_memory);
        self.free_cpu.push(r.free_cpu);
        self.free_memory.push(r.free_memory);
        self.free_ephemeral_storage.push(r.free_ephemeral_storage);
        self.free_pods.push(r.free_pods);
        self.flags.push(r.flags);
        self.count_flags(r.flags, true);
    }

    fn truncate(&mut self, n: usize) {
        for k in n..self.flags.len() {
            self.count_flags(self.flags[k], false);
            self.count_ordinary(self.row(k).ordinary(), false);
        }
        self.alloc_cpu.truncate(n);
        self.alloc_memory.truncate(n);
        self.requested_cpu.truncate(n);
        self.requested_memory.truncate(n);
        self.non_zero_cpu.truncate(n);
        self.non_zero_memory.truncate(n);
        self.free_cpu.truncate(n);
        self.free_memory.truncate(n);
        self.free_ephemeral_storage.truncate(n);
        self.free_pods.truncate(n);
        self.flags.truncate(n);
    }
}
