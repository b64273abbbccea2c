//! Workload scale factors (the `workloadScale` axis).
//!
//! - **Generators**: `count` is multiplied and rounded to the nearest integer; a Poisson `rate`
//!   is multiplied; a fixed `interval` is divided. So a factor of 2 gives twice the pods over the
//!   same time span, arriving twice as fast (shapes, run times and priorities are unchanged).
//! - **Traces** are replayed, not regenerated, so they are scaled by **replicating and
//!   thinning pods**: each created pod appears ⌊f⌋ times, plus once more with probability
//!   f − ⌊f⌋. The extra draw is a hash of the pod's `namespace/name` and the run's seed
//!   (FNV-1a), not an RNG stream, so it does not depend on event order and a pod's copies are
//!   decided once. Copy 0 keeps the pod's name; copy j ≥ 1 is named `<name>-x<j>` (uid likewise).
//!   Every later event naming the pod (delete, complete, update) is applied to each copy; events
//!   for a pod thinned away are dropped. Node events pass through unchanged. Arrival times are
//!   kept: a factor of 2 doubles the pods arriving at each instant of the trace.

use std::collections::{BTreeMap, VecDeque};

use ksim_engine::{EventSource, InputEvent, SourceError, TimedEvent};
use ksim_trace::generator::{fnv1a, Arrival};
use ksim_trace::{BoxedSource, Scenario};

/// Scales every generator of the scenario by `f` (see the module doc).
pub fn scale_generators(s: &mut Scenario, f: f64) {
    if f == 1.0 {
        return;
    }
    for g in &mut s.workload.generators {
        if let Some(c) = g.count.as_mut() {
            *c = (*c as f64 * f).round() as u64;
        }
        match &mut g.arrival {
            Arrival::Poisson { rate } => *rate *= f,
            Arrival::Interval(d) => {
                // At least one microsecond: a zero interval would never advance.
                d.0 = ((d.0 as f64 / f).round() as i64).max(1);
            }
        }
    }
}

/// A trace source whose pods are replicated or thinned by a factor.
pub struct ScaledSource {
    inner: BoxedSource,
    factor: f64,
    seed: u64,
    /// `namespace/name` → copies made (0 when thinned away), for the pod's later events.
    copies: BTreeMap<String, u32>,
    out: VecDeque<TimedEvent>,
}

impl ScaledSource {
    pub fn new(inner: BoxedSource, factor: f64, seed: u64) -> ScaledSource {
        ScaledSource {
            inner,
            factor,
            seed,
            copies: BTreeMap::new(),
            out: VecDeque::new(),
        }
    }

    fn copies_of(&self, key: &str) -> u32 {
        let whole = self.factor.floor();
        let frac = self.factor - whole;
        let mut bytes = key.as_bytes().to_vec();
        bytes.extend_from_slice(&self.seed.to_le_bytes());
        // The top 53 bits as a uniform number in [0, 1).
        let u = (fnv1a(&bytes) >> 11) as f64 / (1u64 << 53) as f64;
        whole as u32 + u32::from(u < frac)
    }

    fn expand(&mut self, e: TimedEvent) {
        let at = e.at;
        let renamed = |name: &str, j: u32| {
            if j == 0 {
                name.to_string()
            } else {
                format!("{name}-x{j}")
            }
        };
        match e.event {
            InputEvent::CreatePod { pod, run_for } => {
                let key = format!("{}/{}", ns(&pod.metadata.namespace), pod.metadata.name);
                let n = self.copies_of(&key);
                self.copies.insert(key, n);
                for j in 0..n {
                    let mut p = pod.clone();
                    p.metadata.name = renamed(&p.metadata.name, j);
                    if j > 0 && !p.metadata.uid.is_empty() {
                        p.metadata.uid = format!("{}-x{j}", p.metadata.uid);
                    }
                    self.out.push_back(TimedEvent {
                        at,
                        event: InputEvent::CreatePod { pod: p, run_for },
                    });
                }
            }
            InputEvent::DeletePod { namespace, name } => {
                let key = format!("{}/{name}", ns(&namespace));
                let n = self.copies.remove(&key).unwrap_or(1);
                for j in 0..n {
                    self.out.push_back(TimedEvent {
                        at,
                        event: InputEvent::DeletePod {
                            namespace: namespace.clone(),
                            name: renamed(&name, j),
                        },
                    });
                }
            }
            InputEvent::CompletePod { namespace, name } => {
                let key = format!("{}/{name}", ns(&namespace));
                let n = self.copies.remove(&key).unwrap_or(1);
                for j in 0..n {
                    self.out.push_back(TimedEvent {
                        at,
                        event: InputEvent::CompletePod {
                            namespace: namespace.clone(),
                            name: renamed(&name, j),
                        },
                    });
                }
            }
            InputEvent::UpdatePod { pod } => {
                let key = format!("{}/{}", ns(&pod.metadata.namespace), pod.metadata.name);
                let n = self.copies.get(&key).copied().unwrap_or(1);
                for j in 0..n {
                    let mut p = pod.clone();
                    p.metadata.name = renamed(&p.metadata.name, j);
                    if j > 0 && !p.metadata.uid.is_empty() {
                        p.metadata.uid = format!("{}-x{j}", p.metadata.uid);
                    }
                    self.out.push_back(TimedEvent {
                        at,
                        event: InputEvent::UpdatePod { pod: p },
                    });
                }
            }
            other => self.out.push_back(TimedEvent { at, event: other }),
        }
    }
}

/// The namespace a pod lands in when none is given.
fn ns(n: &str) -> &str {
    if n.is_empty() {
        "default"
    } else {
        n
    }
}

impl EventSource for ScaledSource {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        loop {
            if let Some(e) = self.out.pop_front() {
                return Ok(Some(e));
            }
            match self.inner.next_event()? {
                None => return Ok(None),
                Some(e) => self.expand(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_engine::{SimTime, VecSource};

    fn create(at: i64, name: &str) -> TimedEvent {
        let mut pod = ksim_api::Pod::default();
        pod.metadata.name = name.into();
        TimedEvent {
            at: SimTime::from_secs(at),
            event: InputEvent::CreatePod {
                pod: Box::new(pod),
                run_for: None,
            },
        }
    }

    fn names(f: f64, n: usize) -> Vec<String> {
        let mut ev: Vec<TimedEvent> = (0..n).map(|i| create(i as i64, &format!("p{i}"))).collect();
        ev.push(TimedEvent {
            at: SimTime::from_secs(n as i64),
            event: InputEvent::DeletePod {
                namespace: "default".into(),
                name: "p0".into(),
            },
        });
        let mut s = ScaledSource::new(Box::new(VecSource::new(ev)), f, 3);
        let mut out = Vec::new();
        while let Some(e) = s.next_event().unwrap() {
            out.push(match e.event {
                InputEvent::CreatePod { pod, .. } => pod.metadata.name,
                InputEvent::DeletePod { name, .. } => format!("delete {name}"),
                _ => String::new(),
            });
        }
        out
    }

    #[test]
    fn replicates_and_thins_by_pod() {
        assert_eq!(
            names(2.0, 2),
            ["p0", "p0-x1", "p1", "p1-x1", "delete p0", "delete p0-x1"]
        );
        let half = names(0.5, 1000);
        let kept = half.iter().filter(|n| !n.starts_with("delete")).count();
        assert!((430..570).contains(&kept), "{kept}");
        // The same pods are kept every time.
        assert_eq!(half, names(0.5, 1000));
        // A thinned pod's delete is dropped with it.
        let p0_kept = half.iter().any(|n| n == "p0");
        assert_eq!(half.iter().any(|n| n == "delete p0"), p0_kept);
    }
}
