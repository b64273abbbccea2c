//! Seeded synthetic workload generators: pods arriving by a Poisson process or at a fixed
//! interval, with a weighted mix of pod shapes, a run-time distribution and weighted priorities,
//! for a number of pods or until the horizon.
//!
//! ```yaml
//! generators:
//!   - name: web                      # pods are named web-0, web-1, ...
//!     namespace: default             # optional (default "default")
//!     start: 0s                      # first arrival not before this (optional)
//!     arrival: {poisson: {rate: 2.5}}   # pods per second; or {interval: 10s}
//!     count: 1000                    # or omit to run until the scenario horizon
//!     shapes:
//!       - {name: small, weight: 3, requests: {cpu: 500m, memory: 1Gi}, labels: {app: web}}
//!       - weight: 1
//!         pod: {spec: {containers: [{name: main, resources: {requests: {cpu: "2"}}}]}}
//!     runTime: {exponential: {mean: 10m}}   # or {fixed: 10m}, {uniform: {min: 1m, max: 5m}},
//!                                           # {lognormal: {median: 5m, sigma: 1.0}}; omit = forever
//!     priorities: [{value: 1000, weight: 1}, {value: 0, weight: 9}]
//! ```
//!
//! Determinism: each generator draws from its own `ChaCha8Rng` seeded with the scenario seed and
//! a stream number derived from the generator's name (FNV-1a), so adding, removing or reordering
//! other generators never changes this one's pods. Per pod, the draws are made in a fixed order:
//! inter-arrival gap, shape, priority, run time. Times are rounded to whole microseconds and
//! accumulated as integers. The exponential and lognormal samplers use `ln`, `exp`, `cos` and
//! `sqrt` of `f64`, which are deterministic on one platform; across CPU architectures the last
//! bit of a libm result may differ (an accepted limit, noted here).

use std::f64::consts::PI;

use ksim_api::defaults::default_pod;
use ksim_api::{Container, Labels, Pod, ResourceList};
use ksim_engine::{EventSource, InputEvent, SimDuration, SimTime, SourceError, TimedEvent};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use serde_json::Value;

use crate::check;
use crate::error::join_path;

/// How pods arrive.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Arrival {
    /// A Poisson process: exponential gaps with mean 1/rate.
    Poisson {
        /// Pods per second.
        rate: f64,
    },
    /// One pod every `interval`.
    Interval(SimDuration),
}

/// How long each pod runs once started.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum RunTime {
    Fixed(SimDuration),
    Exponential {
        mean: SimDuration,
    },
    Uniform {
        min: SimDuration,
        max: SimDuration,
    },
    /// exp(N(ln median, sigma²)).
    Lognormal {
        median: SimDuration,
        sigma: f64,
    },
}

fn one() -> u32 {
    1
}

/// One pod shape in the mix.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodShape {
    /// Written to the label `ksim.io/shape` (default: the shape's index).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "one")]
    pub weight: u32,
    /// A Pod template (metadata.labels, spec...); its name and namespace are replaced.
    #[serde(default)]
    pub pod: Option<Value>,
    /// Requests of the first container (created as `main` when the template has none).
    #[serde(default)]
    pub requests: ResourceList,
    #[serde(default)]
    pub limits: ResourceList,
    #[serde(default)]
    pub labels: Labels,
    #[serde(default)]
    pub node_selector: Labels,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightedPriority {
    pub value: i32,
    #[serde(default = "one")]
    pub weight: u32,
}

fn default_namespace() -> String {
    "default".into()
}

/// A generator as written in a scenario.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorSpec {
    pub name: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    #[serde(default)]
    pub start: Option<SimDuration>,
    pub arrival: Arrival,
    #[serde(default)]
    pub count: Option<u64>,
    pub shapes: Vec<PodShape>,
    #[serde(default)]
    pub run_time: Option<RunTime>,
    #[serde(default)]
    pub priorities: Vec<WeightedPriority>,
}

/// A generator ready to run: templates decoded and checked.
pub struct Generator {
    spec: GeneratorSpec,
    templates: Vec<Pod>,
    shape_names: Vec<String>,
    shape_weights: Vec<u32>,
    priority_weights: Vec<u32>,
    rng: ChaCha8Rng,
    next_at: SimTime,
    index: u64,
    horizon: Option<SimTime>,
}

/// FNV-1a, 64-bit: a stable hash (std's hasher may change between releases).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The RNG stream for a named purpose under a seed.
pub fn stream_rng(seed: u64, purpose: &str) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(fnv1a(purpose.as_bytes()));
    rng
}

impl Generator {
    /// Checks the spec and builds the generator. `path` is the spec's field path for errors
    /// (`workload.generators[0]`); errors are `(field path, message)`.
    pub fn new(
        spec: GeneratorSpec,
        seed: u64,
        horizon: Option<SimTime>,
        path: &str,
    ) -> Result<Generator, (String, String)> {
        let p = |f: &str| join_path(path, f);
        if spec.name.is_empty() {
            return Err((p("name"), "required".into()));
        }
        match &spec.arrival {
            Arrival::Poisson { rate } if !(rate.is_finite() && *rate > 0.0) => {
                return Err((
                    p("arrival.poisson.rate"),
                    format!("{rate} is not a positive number of pods per second"),
                ))
            }
            Arrival::Interval(d) if d.0 <= 0 => {
                return Err((p("arrival.interval"), "must be more than 0".into()))
            }
            _ => {}
        }
        if spec.count.is_none() && horizon.is_none() {
            return Err((
                p("count"),
                "a generator needs a count, or the scenario a horizon, to stop".into(),
            ));
        }
        if spec.shapes.is_empty() {
            return Err((p("shapes"), "at least one shape is required".into()));
        }
        if spec.shapes.iter().all(|s| s.weight == 0) {
            return Err((p("shapes"), "the weights add up to 0".into()));
        }
        if !spec.priorities.is_empty() && spec.priorities.iter().all(|s| s.weight == 0) {
            return Err((p("priorities"), "the weights add up to 0".into()));
        }
        match &spec.run_time {
            Some(RunTime::Uniform { min, max }) if min > max => {
                return Err((p("runTime.uniform"), "min is more than max".into()))
            }
            Some(RunTime::Lognormal { sigma, .. }) if !(sigma.is_finite() && *sigma >= 0.0) => {
                return Err((p("runTime.lognormal.sigma"), "must be ≥ 0".into()))
            }
            _ => {}
        }
        let mut templates = Vec::new();
        let mut shape_names = Vec::new();
        for (i, s) in spec.shapes.iter().enumerate() {
            let sp = p(&format!("shapes[{i}]"));
            let mut pod: Pod = match &s.pod {
                Some(v) => {
                    let mut v = v.clone();
                    // The name is generated; give the template one so decoding succeeds.
                    if let Some(m) = v.as_object_mut() {
                        let meta = m
                            .entry("metadata")
                            .or_insert_with(|| Value::Object(Default::default()));
                        if let Some(meta) = meta.as_object_mut() {
                            meta.insert("name".into(), Value::String("template".into()));
                        }
                    }
                    crate::native::decode_pod(&v, &join_path(&sp, "pod"))?
                }
                None => Pod::default(),
            };
            if pod.spec.containers.is_empty() {
                pod.spec.containers.push(Container {
                    name: "main".into(),
                    ..Container::default()
                });
            }
            let c = &mut pod.spec.containers[0];
            for (k, q) in &s.requests {
                check::check_quantity(k, q)
                    .map_err(|m| (join_path(&sp, &format!("requests.{k}")), m))?;
                c.resources.requests.insert(k.clone(), q.clone());
            }
            for (k, q) in &s.limits {
                check::check_quantity(k, q)
                    .map_err(|m| (join_path(&sp, &format!("limits.{k}")), m))?;
                c.resources.limits.insert(k.clone(), q.clone());
            }
            pod.metadata.labels.extend(s.labels.clone());
            pod.spec.node_selector.extend(s.node_selector.clone());
            let name = s.name.clone().unwrap_or_else(|| i.to_string());
            pod.metadata
                .labels
                .insert("ksim.io/generator".into(), spec.name.clone());
            pod.metadata
                .labels
                .insert("ksim.io/shape".into(), name.clone());
            pod.metadata.namespace = spec.namespace.clone();
            templates.push(pod);
            shape_names.push(name);
        }
        let rng = stream_rng(seed, &format!("generator/{}", spec.name));
        let next_at = SimTime(spec.start.map(|d| d.0).unwrap_or(0));
        Ok(Generator {
            shape_weights: spec.shapes.iter().map(|s| s.weight).collect(),
            priority_weights: spec.priorities.iter().map(|p| p.weight).collect(),
            spec,
            templates,
            shape_names,
            rng,
            next_at,
            index: 0,
            horizon,
        })
    }

    fn unit(&mut self) -> f64 {
        // [0, 1)
        self.rng.random::<f64>()
    }

    fn pick(rng: &mut ChaCha8Rng, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().copied().map(u64::from).sum();
        let mut x = rng.random_range(0..total.max(1));
        for (i, w) in weights.iter().enumerate() {
            if x < u64::from(*w) {
                return i;
            }
            x -= u64::from(*w);
        }
        0
    }

    fn secs_to_duration(secs: f64) -> SimDuration {
        // Clamp into the accepted range rather than overflow on an extreme draw.
        let max = check::MAX_TIME_SECS as f64;
        SimDuration((secs.clamp(0.0, max) * 1e6).round() as i64)
    }

    fn draw_run_time(&mut self) -> Option<SimDuration> {
        let rt = self.spec.run_time.clone()?;
        Some(match rt {
            RunTime::Fixed(d) => d,
            RunTime::Exponential { mean } => {
                let u = self.unit();
                Self::secs_to_duration(-mean.as_secs_f64() * (1.0 - u).ln())
            }
            RunTime::Uniform { min, max } => SimDuration(self.rng.random_range(min.0..=max.0)),
            RunTime::Lognormal { median, sigma } => {
                // Box–Muller; u1 in (0, 1] so ln is finite.
                let u1 = 1.0 - self.unit();
                let u2 = self.unit();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos();
                Self::secs_to_duration(median.as_secs_f64() * (sigma * z).exp())
            }
        })
    }

    fn gap(&mut self) -> SimDuration {
        match self.spec.arrival {
            Arrival::Poisson { rate } => {
                let u = self.unit();
                Self::secs_to_duration(-(1.0 - u).ln() / rate)
            }
            Arrival::Interval(d) => d,
        }
    }
}

impl EventSource for Generator {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        if self.spec.count.is_some_and(|c| self.index >= c) {
            return Ok(None);
        }
        // Poisson: the first pod also waits one gap after `start`; interval: the first pod
        // arrives at `start` exactly.
        let at = if self.index == 0 && matches!(self.spec.arrival, Arrival::Interval(_)) {
            self.next_at
        } else {
            let g = self.gap();
            self.next_at.saturating_add(g)
        };
        if self.horizon.is_some_and(|h| at > h) {
            self.spec.count = Some(self.index);
            return Ok(None);
        }
        self.next_at = at;
        let shape = Self::pick(&mut self.rng, &self.shape_weights);
        let priority = if self.spec.priorities.is_empty() {
            None
        } else {
            let i = Self::pick(&mut self.rng, &self.priority_weights);
            Some(self.spec.priorities[i].value)
        };
        let run_for = self.draw_run_time();
        let mut pod = self.templates[shape].clone();
        pod.metadata.name = format!("{}-{}", self.spec.name, self.index);
        pod.metadata.uid.clear();
        if priority.is_some() {
            pod.spec.priority = priority;
        }
        default_pod(&mut pod);
        debug_assert_eq!(
            pod.metadata.labels.get("ksim.io/shape"),
            Some(&self.shape_names[shape])
        );
        self.index += 1;
        Ok(Some(TimedEvent {
            at,
            event: InputEvent::CreatePod {
                pod: Box::new(pod),
                run_for,
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> GeneratorSpec {
        let v: Value = serde_saphyr::from_str(yaml).unwrap();
        serde_json::from_value(v).unwrap()
    }

    fn drain(g: &mut Generator) -> Vec<TimedEvent> {
        let mut out = Vec::new();
        while let Some(e) = g.next_event().unwrap() {
            out.push(e);
        }
        out
    }

    const WEB: &str = "name: web\narrival: {poisson: {rate: 2}}\ncount: 200\nshapes:\n  - {name: s, weight: 3, requests: {cpu: 500m}}\n  - {name: l, weight: 1, requests: {cpu: '2'}}\nrunTime: {lognormal: {median: 5m, sigma: 1.0}}\npriorities: [{value: 100, weight: 1}, {value: 0, weight: 3}]\n";

    #[test]
    fn same_seed_same_events_other_seed_other_events() {
        let a = drain(&mut Generator::new(spec(WEB), 7, None, "g").unwrap());
        let b = drain(&mut Generator::new(spec(WEB), 7, None, "g").unwrap());
        let c = drain(&mut Generator::new(spec(WEB), 8, None, "g").unwrap());
        assert_eq!(a.len(), 200);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[0].at <= w[1].at));
        // Rate 2/s over 200 pods: about 100 s.
        let last = a.last().unwrap().at.as_secs_f64();
        assert!((60.0..150.0).contains(&last), "{last}");
        let small = a
            .iter()
            .filter(|e| matches!(&e.event, InputEvent::CreatePod { pod, .. } if pod.metadata.labels["ksim.io/shape"] == "s"))
            .count();
        assert!((110..190).contains(&small), "{small}");
    }

    #[test]
    fn interval_until_horizon() {
        let s = spec("name: tick\narrival: {interval: 10s}\nshapes: [{requests: {cpu: '1'}}]\nrunTime: {fixed: 1m}\n");
        let evs = drain(&mut Generator::new(s, 0, Some(SimTime::from_secs(60)), "g").unwrap());
        let times: Vec<i64> = evs.iter().map(|e| e.at.whole_secs()).collect();
        assert_eq!(times, [0, 10, 20, 30, 40, 50, 60]);
        let InputEvent::CreatePod { pod, run_for } = &evs[3].event else {
            panic!()
        };
        assert_eq!(pod.metadata.name, "tick-3");
        assert_eq!(*run_for, Some(SimDuration::from_secs(60)));
    }

    #[test]
    fn bad_specs_name_the_field() {
        let cases = [
            ("name: x\narrival: {poisson: {rate: 0}}\ncount: 1\nshapes: [{}]\n", "g.arrival.poisson.rate"),
            ("name: x\narrival: {interval: 1s}\nshapes: [{}]\n", "g.count"),
            ("name: x\narrival: {interval: 1s}\ncount: 1\nshapes: []\n", "g.shapes"),
            ("name: x\narrival: {interval: 1s}\ncount: 1\nshapes: [{requests: {cpu: '-1'}}]\n", "g.shapes[0].requests.cpu"),
            ("name: x\narrival: {interval: 1s}\ncount: 1\nshapes: [{}]\nrunTime: {uniform: {min: 2s, max: 1s}}\n", "g.runTime.uniform"),
        ];
        for (y, field) in cases {
            let err = Generator::new(spec(y), 0, None, "g").err().unwrap();
            assert_eq!(err.0, field, "{y}: {err:?}");
        }
    }
}
