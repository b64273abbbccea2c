//! The node-group autoscaler's decisions (settings and the model: [`crate::autoscale`]). A child
//! module of `sim`, so it acts through the simulation's own node add/remove paths; `sim/mod.rs`
//! calls it at three points: when the run starts, when one of its timers fires, and when the
//! run decides whether anything is left to do.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::defaults::default_node;
use ksim_api::Node;
use ksim_scheduler::framework::CycleState;
use ksim_scheduler::node_info::NodeInfo;
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::Location;
use ksim_scheduler::resource::Resource;

use super::{pool_of, Ev, PodId, Simulation};
use crate::autoscale::AutoscalerConfig;
use crate::record::Observer;
use crate::time::SimTime;

/// The autoscaler's timers.
#[derive(Debug, Clone)]
pub(super) enum Timer {
    Scan,
    /// A node of pool `pool` finished provisioning.
    Ready {
        pool: usize,
        node: Box<Node>,
    },
}

/// What the autoscaler remembers between scans.
#[derive(Clone)]
pub(super) struct State {
    cfg: AutoscalerConfig,
    /// Pods seen unschedulable, with the first scan that saw them so.
    pub(super) first_seen: BTreeMap<PodId, SimTime>,
    /// Per pool: nodes being provisioned.
    upcoming: Vec<u32>,
    /// Per pool: the template as a NodeInfo (defaulted), for the Filter plugins.
    templates: Vec<NodeInfo>,
    /// Per pool: the next node-name index to try.
    next_index: Vec<u32>,
    /// Nodes under the utilization threshold, since when.
    under_since: BTreeMap<String, SimTime>,
    last_scale_up: Option<SimTime>,
}

impl State {
    pub(super) fn new(cfg: AutoscalerConfig) -> State {
        let templates = cfg
            .pools
            .iter()
            .map(|p| {
                let mut n = p.template.clone();
                n.metadata.name = format!("{}-template", p.pool);
                n.metadata
                    .labels
                    .insert("ksim.io/pool".into(), p.pool.clone());
                default_node(&mut n);
                NodeInfo::new(Arc::new(n))
            })
            .collect();
        State {
            upcoming: vec![0; cfg.pools.len()],
            next_index: vec![0; cfg.pools.len()],
            templates,
            cfg,
            first_seen: BTreeMap::new(),
            under_since: BTreeMap::new(),
            last_scale_up: None,
        }
    }
}

/// Whether `req` fits into `free` by every requested resource and the pod count.
fn fits(free: &Resource, req: &Resource) -> bool {
    if free.allowed_pod_number < 1
        || req.milli_cpu > free.milli_cpu
        || req.memory > free.memory
        || req.ephemeral_storage > free.ephemeral_storage
    {
        return false;
    }
    req.scalar.iter().all(|(n, v)| *v <= free.scalar(n))
}

fn take(free: &mut Resource, req: &Resource) {
    free.sub(req);
    free.allowed_pod_number -= 1;
}

/// Free capacity of a node: allocatable − requested, with the pod slots left.
fn free_of(n: &NodeInfo) -> Resource {
    let mut f = n.allocatable.clone();
    f.sub(&n.requested);
    f.allowed_pod_number = n.allocatable.allowed_pod_number - n.pods.len() as i64;
    if n.allocatable.allowed_pod_number == 0 {
        // A node that reports no pod capacity does not limit the pod count.
        f.allowed_pod_number = i64::MAX;
    }
    f
}

impl Simulation {
    /// Arms the first scan (called once, when the run starts).
    pub(super) fn start_autoscaler(&mut self) {
        if self.autoscaler.is_some() {
            self.schedule(self.now, 1, Ev::Autoscale(Timer::Scan));
        }
    }

    /// Whether a scan could still add nodes: some unschedulable pod fits a pool's template that
    /// has room, or nodes are being provisioned. Without a horizon the run goes on while so.
    pub(super) fn autoscaler_has_work(&self) -> bool {
        let Some(st) = &self.autoscaler else {
            return false;
        };
        if st.upcoming.iter().any(|&u| u > 0) {
            return true;
        }
        let pending: Vec<PodId> = self
            .unschedulable_pods()
            .into_iter()
            .filter(|&id| {
                self.queue
                    .get(id)
                    .is_some_and(|q| q.location == Location::Unschedulable)
            })
            .collect();
        !pending.is_empty()
            && (0..st.cfg.pools.len()).any(|i| {
                self.pool_size(&st.cfg.pools[i].pool) < st.cfg.pools[i].max
                    && pending.iter().any(|&id| {
                        self.template_fits(&self.pods[id as usize].info, &st.templates[i])
                    })
            })
    }

    pub(super) fn on_autoscale(&mut self, t: Timer, obs: &mut dyn Observer) {
        match t {
            Timer::Ready { pool, node } => {
                if let Some(st) = self.autoscaler.as_mut() {
                    st.upcoming[pool] = st.upcoming[pool].saturating_sub(1);
                }
                // The name was free when chosen; a trace may have taken it since. Then the
                // node is not added (the trace's node stands).
                let _ = self.add_node(*node, obs);
            }
            Timer::Scan => {
                self.scale_up();
                self.scale_down(obs);
                if let Some(st) = &self.autoscaler {
                    let next = self.now + st.cfg.scan_interval;
                    self.schedule(next, 1, Ev::Autoscale(Timer::Scan));
                }
            }
        }
    }

    /// Pods the scheduler found unschedulable and that wait for no preemption, by id.
    fn unschedulable_pods(&self) -> Vec<PodId> {
        self.queue
            .iter()
            .filter(|(id, q)| {
                q.attempts > 0
                    && q.unschedulable_count > 0
                    && q.pod.pod.status.nominated_node_name.is_empty()
                    && self.in_flight != Some(*id)
            })
            .map(|(id, _)| id)
            .collect()
    }

    fn pool_size(&self, pool: &str) -> u32 {
        self.snapshot
            .nodes
            .iter()
            .filter(|n| pool_of(&n.node) == pool)
            .count() as u32
    }

    /// The scheduler's PreFilter and Filter plugins, against an empty template node.
    fn template_fits(&self, info: &PodInfo, template: &NodeInfo) -> bool {
        let fwk = self.framework_for(info).unwrap_or_else(|| self.fwk0());
        let mut state = CycleState::new();
        let pre = fwk.run_pre_filter(&mut state, info, &self.snapshot);
        if !pre.status.is_success() {
            return false;
        }
        fwk.run_filter(&state, info, template).is_success()
    }

    fn scale_up(&mut self) {
        let Some(st) = self.autoscaler.as_ref() else {
            return;
        };
        let now = self.now;
        let pending = self.unschedulable_pods();
        let delay = st.cfg.scale_up_delay;
        let npools = st.cfg.pools.len();
        let mut first_seen = st.first_seen.clone();
        first_seen.retain(|id, _| pending.binary_search(id).is_ok());
        for &id in &pending {
            first_seen.entry(id).or_insert(now);
        }
        // Only pods resting in the unschedulable pool: one that a cluster event (a node that
        // just joined, a pod that left) sent back to the active or backoff queue gets its
        // retry first, as Cluster Autoscaler leaves pods the scheduler can still place.
        let mut ready: Vec<(SimTime, PodId)> = first_seen
            .iter()
            .filter(|(&id, &t)| {
                now.micros() - t.micros() >= delay.micros()
                    && self
                        .queue
                        .get(id)
                        .is_some_and(|q| q.location == Location::Unschedulable)
            })
            .map(|(&id, &t)| (t, id))
            .collect();
        ready.sort();
        // Per pool: free capacity of nodes being provisioned or planned now.
        let mut bins: Vec<Vec<Resource>> = (0..npools)
            .map(|i| vec![free_of(&st.templates[i]); st.upcoming[i] as usize])
            .collect();
        let mut room: Vec<u32> = (0..npools)
            .map(|i| {
                st.cfg.pools[i]
                    .max
                    .saturating_sub(self.pool_size(&st.cfg.pools[i].pool) + st.upcoming[i])
            })
            .collect();
        let mut new_nodes = vec![0u32; npools];
        for (_, id) in ready {
            let info = self.pods[id as usize].info.clone();
            for i in 0..npools {
                if !self.template_fits(&info, &st.templates[i]) {
                    continue;
                }
                if let Some(b) = bins[i].iter_mut().find(|b| fits(b, &info.requests)) {
                    take(b, &info.requests);
                } else if room[i] > 0 {
                    let mut b = free_of(&st.templates[i]);
                    take(&mut b, &info.requests);
                    bins[i].push(b);
                    room[i] -= 1;
                    new_nodes[i] += 1;
                }
                // The first pool whose template fits takes the pod, whether or not it had room.
                break;
            }
        }
        let delay = st.cfg.provisioning_delay;
        let mut to_add: Vec<(usize, Node)> = Vec::new();
        let mut next_index = st.next_index.clone();
        for (i, &n) in new_nodes.iter().enumerate() {
            for _ in 0..n {
                let pool = &st.cfg.pools[i].pool;
                let name = loop {
                    let name = format!("{pool}-{}", next_index[i]);
                    next_index[i] += 1;
                    if self.snapshot.get(&name).is_none() && !self.ghosts.contains_key(&name) {
                        break name;
                    }
                };
                let mut node = st.cfg.pools[i].template.clone();
                node.metadata
                    .labels
                    .insert("ksim.io/pool".into(), pool.clone());
                node.metadata
                    .labels
                    .insert("kubernetes.io/hostname".into(), name.clone());
                node.metadata.uid = format!("uid-node-{name}");
                node.metadata.name = name;
                to_add.push((i, node));
            }
        }
        let added = !to_add.is_empty();
        for (i, node) in to_add {
            self.schedule(
                now + delay,
                0,
                Ev::Autoscale(Timer::Ready {
                    pool: i,
                    node: Box::new(node),
                }),
            );
        }
        if let Some(st) = self.autoscaler.as_mut() {
            st.first_seen = first_seen;
            st.next_index = next_index;
            for (i, n) in new_nodes.iter().enumerate() {
                st.upcoming[i] += n;
            }
            if added {
                st.last_scale_up = Some(now);
            }
        }
    }

    fn scale_down(&mut self, obs: &mut dyn Observer) {
        let Some(st) = self.autoscaler.as_ref() else {
            return;
        };
        let now = self.now;
        let cfg = &st.cfg;
        let mut under = st.under_since.clone();
        // Utilization of every autoscaled node, in arrival order.
        let mut candidates: Vec<String> = Vec::new();
        for name in &self.node_order {
            let Some(n) = self.snapshot.get(name) else {
                continue;
            };
            if !cfg.pools.iter().any(|p| p.pool == pool_of(&n.node)) {
                continue;
            }
            let share = |req: i64, alloc: i64| {
                if alloc > 0 {
                    req as f64 / alloc as f64
                } else {
                    0.0
                }
            };
            let util = share(n.requested.milli_cpu, n.allocatable.milli_cpu)
                .max(share(n.requested.memory, n.allocatable.memory));
            if util < cfg.scale_down_utilization {
                let since = *under.entry(name.clone()).or_insert(now);
                if now.micros() - since.micros() >= cfg.scale_down_unneeded_time.micros() {
                    candidates.push(name.clone());
                }
            } else {
                under.remove(name);
            }
        }
        under.retain(|n, _| self.snapshot.get(n).is_some());
        let recent_add = st
            .last_scale_up
            .is_some_and(|t| now.micros() - t.micros() < cfg.scale_down_delay_after_add.micros());
        let mut remove: Vec<String> = Vec::new();
        if !recent_add {
            let mut sizes: BTreeMap<String, u32> = cfg
                .pools
                .iter()
                .map(|p| (p.pool.clone(), self.pool_size(&p.pool)))
                .collect();
            let mins: BTreeMap<&str, u32> =
                cfg.pools.iter().map(|p| (p.pool.as_str(), p.min)).collect();
            let mut moved_one = false;
            for name in &candidates {
                let Some(n) = self.snapshot.get(name) else {
                    continue;
                };
                let pool = pool_of(&n.node);
                let size = sizes.get(&pool).copied().unwrap_or(0);
                if size <= mins.get(pool.as_str()).copied().unwrap_or(0) {
                    continue;
                }
                let empty = n.pods.is_empty();
                if !empty {
                    if moved_one || !self.pods_fit_elsewhere(n, &remove) {
                        continue;
                    }
                    moved_one = true;
                }
                sizes.insert(pool, size - 1);
                remove.push(name.clone());
            }
        }
        if let Some(st) = self.autoscaler.as_mut() {
            for n in &remove {
                under.remove(n);
            }
            st.under_since = under;
        }
        for name in remove {
            let _ = self.remove_node(&name, obs);
        }
    }

    /// Whether every pod of `node` is owned by a controller and all fit, first fit by
    /// requests, on the other schedulable nodes (not those in `gone`).
    fn pods_fit_elsewhere(&self, node: &NodeInfo, gone: &[String]) -> bool {
        let owned = node.pods.iter().all(|p| {
            p.pod
                .metadata
                .owner_references
                .iter()
                .any(|o| o.controller == Some(true))
        });
        if !owned {
            return false;
        }
        let mut frees: Vec<Resource> = self
            .snapshot
            .nodes
            .iter()
            .filter(|n| {
                n.name() != node.name()
                    && !n.node.spec.unschedulable
                    && !gone.iter().any(|g| g == n.name())
            })
            .map(free_of)
            .collect();
        node.pods
            .iter()
            .all(|p| match frees.iter_mut().find(|f| fits(f, &p.requests)) {
                Some(f) => {
                    take(f, &p.requests);
                    true
                }
                None => false,
            })
    }
}
