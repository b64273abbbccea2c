//! Room: cluster events and queueing hints. [`OwnedEvent`] is a cluster event as it happened;
//! `dispatch` offers it to the scheduling queue (whose queueing hints move pods out of the
//! unschedulable pool), bumps the cluster generation and, while a cycle is in flight, keeps it so
//! that the failed pod's requeue can replay it (upstream's in-flight events,
//! `determineSchedulingHintForInFlightPod`).
//!
//! Reacts to: every cluster change of the other rooms (pods, nodes, storage objects), which all go
//! through `dispatch`; and a failed cycle's end (`in_flight_requeue`).

use std::sync::Arc;

use ksim_api::Node;
use ksim_scheduler::framework::{ClusterEventKind, ClusterEventObjects, Framework};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::{in_flight_strategy, requeue_strategy, QueueingStrategy};

use super::{PodId, Simulation};
/// A cluster event as it happened, kept while a cycle is in flight.
#[derive(Clone)]
pub(super) enum OwnedEvent {
    Node {
        kinds: Vec<ClusterEventKind>,
        old: Option<Arc<Node>>,
        new: Option<Arc<Node>>,
    },
    Pod {
        kind: ClusterEventKind,
        old: Option<Arc<PodInfo>>,
        new: Option<Arc<PodInfo>>,
    },
    /// A storage object, PDB or Service changed.
    Object {
        kind: ClusterEventKind,
        old: Option<Arc<ksim_api::object::ApiObject>>,
        new: Option<Arc<ksim_api::object::ApiObject>>,
    },
}
impl Simulation {
    /// `determineSchedulingHintForInFlightPod`: how a pod whose attempt failed with `plugins`
    /// (of which `pending` answered Pending) is requeued, given the events that arrived while
    /// its cycle was in flight.
    pub(super) fn in_flight_requeue(
        &self,
        pod: PodId,
        plugins: &[&'static str],
        pending: &[&'static str],
        events: &[OwnedEvent],
    ) -> QueueingStrategy {
        let fwk = self.fwk0();
        self.refresh_dra_objects(false);
        self.queue
            .get(pod)
            .cloned()
            .map_or(QueueingStrategy::AfterBackoff, |mut q| {
                q.unschedulable_plugins = plugins.to_vec();
                q.pending_plugins = pending.to_vec();
                in_flight_strategy(&q, events.iter().map(|e| event_strategy(&fwk, &q, e)))
            })
    }

    /// Offers a cluster event to the queue (and remembers it while a cycle is in flight).
    pub(super) fn dispatch(&mut self, ev: OwnedEvent) {
        self.cluster_generation += 1;
        let now = self.now.micros();
        let fwk = self.fwk0();
        self.refresh_dra_objects(false);
        match &ev {
            OwnedEvent::Node { kinds, old, new } => {
                let objs = ClusterEventObjects::Node {
                    old: old.as_deref(),
                    new: new.as_deref(),
                };
                self.queue.on_event(kinds, &objs, now, &fwk);
            }
            OwnedEvent::Pod { kind, old, new } => {
                let objs = ClusterEventObjects::Pod {
                    old: old.as_deref(),
                    new: new.as_deref(),
                };
                self.queue.on_event(&[*kind], &objs, now, &fwk);
            }
            OwnedEvent::Object { kind, old, new } => {
                let objs = ClusterEventObjects::Object {
                    old: old.as_deref(),
                    new: new.as_deref(),
                };
                self.queue.on_event(&[*kind], &objs, now, &fwk);
            }
        }
        if self.busy {
            self.in_flight_events.push(ev);
        }
    }
}
/// The strongest requeue strategy of one in-flight event (a node update offers each of its
/// extracted kinds).
fn event_strategy(
    fwk: &Framework,
    q: &ksim_scheduler::queue::QueuedPod,
    e: &OwnedEvent,
) -> QueueingStrategy {
    match e {
        OwnedEvent::Node { kinds, old, new } => {
            let objs = ClusterEventObjects::Node {
                old: old.as_deref(),
                new: new.as_deref(),
            };
            kinds
                .iter()
                .map(|k| requeue_strategy(fwk, q, *k, &objs))
                .max()
                .unwrap_or(QueueingStrategy::Skip)
        }
        OwnedEvent::Pod { kind, old, new } => {
            let objs = ClusterEventObjects::Pod {
                old: old.as_deref(),
                new: new.as_deref(),
            };
            requeue_strategy(fwk, q, *kind, &objs)
        }
        OwnedEvent::Object { kind, old, new } => {
            let objs = ClusterEventObjects::Object {
                old: old.as_deref(),
                new: new.as_deref(),
            };
            requeue_strategy(fwk, q, *kind, &objs)
        }
    }
}
