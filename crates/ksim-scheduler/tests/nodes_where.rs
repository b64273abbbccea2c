//! `NodeToStatus::nodes_where` takes every node at once when each node up to the explicit
//! table's end has an explicit status and every status is kept. This test fills tables with
//! random `set` and `set_run` calls (runs sharing a status or not, past the node count too,
//! with and without an absent status) and compares `nodes_where` with asking `keep` of each
//! node's status (`get`).

use ksim_scheduler::framework::{Code, NodeToStatus, Status};
use proptest::prelude::*;

/// Shared statuses for `set_run` (it takes `&'static`).
static RUN_STATUSES: std::sync::LazyLock<[Status; 2]> = std::sync::LazyLock::new(|| {
    [
        Status::unschedulable("Insufficient cpu"),
        Status::unresolvable("node(s) didn't match Pod's node affinity/selector"),
    ]
});

/// (start, length, which: 0..2 a run of a shared status, 2 `set` of an unschedulable
/// status, 3 of an unresolvable one, 4 of an error).
type Op = (usize, usize, u8);

fn table(num_nodes: usize, ops: &[Op], absent: Option<u8>) -> NodeToStatus {
    let mut t = NodeToStatus::new(num_nodes);
    for &(start, len, which) in ops {
        match which {
            0 | 1 => t.set_run(start..start + len, &RUN_STATUSES[which as usize]),
            2 => t.set(start, Status::unschedulable("x")),
            3 => t.set(start, Status::unresolvable("y")),
            _ => t.set(start, Status::error("z")),
        }
    }
    t.absent = absent.map(|a| match a {
        0 => Status::unschedulable("absent"),
        _ => Status::unresolvable("absent"),
    });
    t
}

proptest! {
    #[test]
    fn nodes_where_is_keep_of_each_node(
        num_nodes in 0usize..40,
        ops in proptest::collection::vec((0usize..45, 0usize..45, 0u8..5), 0..6),
        absent in proptest::option::of(0u8..2),
        keep_code in 0u8..3,
    ) {
        let t = table(num_nodes, &ops, absent);
        let code = [Code::Unschedulable, Code::UnschedulableAndUnresolvable, Code::Error]
            [keep_code as usize];
        let keep = |s: Option<&Status>| s.is_some_and(|s| s.code == code);
        let want: Vec<usize> = (0..num_nodes).filter(|&i| keep(t.get(i))).collect();
        prop_assert_eq!(t.nodes_where(num_nodes, keep), want.clone());
        // Everything kept.
        let all: Vec<usize> = (0..num_nodes).filter(|&i| t.get(i).is_some()).collect();
        prop_assert_eq!(t.nodes_where(num_nodes, |s| s.is_some()), all);
    }
}
