//! Merging several time-ordered sources (trace files, generators) into one: a k-way merge on
//! (time, source index, sequence within the source), so events at the same instant come out in
//! a defined order — first by the order the sources were listed in, then in each source's own
//! order — whatever the sources are. Errors pass through unchanged (they already name their
//! file and line); after an error the merged source ends.
//!
//! A pod, node or object created with `metadata.generateName` and no name is named here, as the
//! API server names it: the prefix plus five characters from `bcdfghjklmnpqrstvwxz2456789`, drawn from a
//! ChaCha stream of the run seed ([`MergedSource::set_seed`]), in event order — the same seed
//! gives the same names.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use std::collections::HashSet;

use ksim_engine::{EventSource, InputEvent, SimTime, SourceError, SourcePos, TimedEvent};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A source that can move to the simulation's thread.
pub type BoxedSource = Box<dyn EventSource + Send>;

/// The k-way merge of several sources.
pub struct MergedSource {
    sources: Vec<BoxedSource>,
    heads: Vec<Option<(TimedEvent, Option<SourcePos>)>>,
    /// Where the event last returned was read.
    last_pos: Option<SourcePos>,
    seq: Vec<u64>,
    heap: BinaryHeap<Reverse<(SimTime, usize, u64)>>,
    primed: bool,
    failed: bool,
    last: SimTime,
    names: NameGenerator,
}

/// upstream `names.SimpleNameGenerator` with the alphabet of `utilrand.String`.
struct NameGenerator {
    seed: u64,
    rng: Option<ChaCha8Rng>,
    /// Names given so far (`namespace/name`): a collision draws again, as the API server retries.
    given: HashSet<String>,
}

/// `utilrand` alphanumerics: no vowels (no words) and no confusable characters.
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const NAME_SUFFIX_LEN: usize = 5;

impl NameGenerator {
    fn name(&mut self, namespace: &str, prefix: &str) -> String {
        let seed = self.seed;
        let rng = self
            .rng
            .get_or_insert_with(|| crate::generator::stream_rng(seed, "generateName"));
        loop {
            let mut name = prefix.to_string();
            for _ in 0..NAME_SUFFIX_LEN {
                name.push(char::from(
                    NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())],
                ));
            }
            if self.given.insert(format!("{namespace}/{name}")) {
                return name;
            }
        }
    }

    fn apply(&mut self, ev: &mut TimedEvent) {
        match &mut ev.event {
            InputEvent::CreatePod { pod, .. } => {
                let m = &mut pod.metadata;
                if m.name.is_empty() && !m.generate_name.is_empty() {
                    let ns = if m.namespace.is_empty() {
                        "default".to_string()
                    } else {
                        m.namespace.clone()
                    };
                    m.name = self.name(&ns, &m.generate_name);
                    if m.uid.is_empty() {
                        m.uid = format!("uid-{ns}-{}", m.name);
                    }
                }
            }
            InputEvent::AddNode { node, .. } => {
                let m = &mut node.metadata;
                if m.name.is_empty() && !m.generate_name.is_empty() {
                    // Nodes are cluster-scoped: their names are unique across the cluster.
                    m.name = self.name("Node:", &m.generate_name);
                }
            }
            InputEvent::CreateObject { object, .. } => {
                let meta = object.metadata();
                if meta.name.is_empty() && !meta.generate_name.is_empty() {
                    // Unique per kind and namespace, as the API server's store keys.
                    let scope = format!("{:?}:{}", object.kind(), object.namespace());
                    let prefix = meta.generate_name.clone();
                    let name = self.name(&scope, &prefix);
                    object.set_generated_name(name);
                }
            }
            _ => {}
        }
    }
}

impl MergedSource {
    pub fn new(sources: Vec<BoxedSource>) -> MergedSource {
        let n = sources.len();
        MergedSource {
            sources,
            heads: (0..n).map(|_| None).collect(),
            last_pos: None,
            seq: vec![0; n],
            heap: BinaryHeap::with_capacity(n),
            primed: false,
            failed: false,
            last: SimTime::ZERO,
            names: NameGenerator {
                seed: 0,
                rng: None,
                given: HashSet::new(),
            },
        }
    }

    /// The run seed, from which the names of `generateName` pods are drawn (default 0). Set it
    /// before the first event is read.
    pub fn set_seed(&mut self, seed: u64) {
        self.names.seed = seed;
        self.names.rng = None;
    }

    /// Names the initial nodes created with `metadata.generateName` and no name (nodes files,
    /// pools, dumps), as the API server would have named them when they were created: call it
    /// after [`MergedSource::set_seed`] and before the first event is read. The names come first
    /// from the run seed's stream, in the nodes' given order, so the same seed gives the same
    /// names; explicit names are reserved first, so a generated name never takes one. The caller
    /// inserts the nodes in name order afterwards, generated names included, as the API server's
    /// list returns them.
    pub fn name_initial_nodes(&mut self, nodes: &mut [ksim_api::Node]) {
        for n in nodes.iter() {
            if !n.metadata.name.is_empty() {
                self.names
                    .given
                    .insert(format!("Node:/{}", n.metadata.name));
            }
        }
        for n in nodes.iter_mut() {
            let m = &mut n.metadata;
            if m.name.is_empty() && !m.generate_name.is_empty() {
                m.name = self.names.name("Node:", &m.generate_name);
            }
        }
    }

    /// Adds `source` before the others (its events come first among events of the same
    /// instant), as a scenario's t=0 objects come before its traces. Call it before the first
    /// event is read; afterwards it is an error.
    pub fn prepend(&mut self, source: BoxedSource) -> Result<(), &'static str> {
        if self.primed {
            return Err("events were already read");
        }
        self.sources.insert(0, source);
        self.heads.insert(0, None);
        self.seq.insert(0, 0);
        Ok(())
    }

    /// How many sources are merged.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    fn pull(&mut self, i: usize) -> Result<(), SourceError> {
        if let Some(ev) = self.sources[i].next_event()? {
            self.seq[i] += 1;
            self.heap.push(Reverse((ev.at, i, self.seq[i])));
            self.heads[i] = Some((ev, self.sources[i].last_position()));
        }
        Ok(())
    }
}

impl EventSource for MergedSource {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        if self.failed {
            return Ok(None);
        }
        if !self.primed {
            self.primed = true;
            for i in 0..self.sources.len() {
                if let Err(e) = self.pull(i) {
                    self.failed = true;
                    return Err(e);
                }
            }
        }
        let Some(Reverse((at, i, _))) = self.heap.pop() else {
            return Ok(None);
        };
        let Some((ev, pos)) = self.heads[i].take() else {
            // The heap holds one entry per filled head; an empty head here is a bug.
            debug_assert!(false, "merge heap entry without a head");
            return Ok(None);
        };
        if at < self.last {
            // A source went back in time (a buggy custom source); readers check their own order.
            self.failed = true;
            return Err(SourceError {
                message: format!(
                    "source {i} produced an event at {at} after one at {}; sources must be time-ordered",
                    self.last
                ),
            });
        }
        self.last = at;
        if let Err(e) = self.pull(i) {
            self.failed = true;
            return Err(e);
        }
        self.last_pos = pos;
        let mut ev = ev;
        self.names.apply(&mut ev);
        Ok(Some(ev))
    }
    fn last_position(&self) -> Option<SourcePos> {
        self.last_pos.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_engine::{InputEvent, VecSource};

    fn ev(at: i64, name: &str) -> TimedEvent {
        TimedEvent {
            at: SimTime(at),
            event: InputEvent::RemoveNode { name: name.into() },
        }
    }

    #[test]
    fn merges_in_time_then_source_then_sequence_order() {
        let a = VecSource::new(vec![ev(1, "a1"), ev(5, "a5"), ev(5, "a5b")]);
        let b = VecSource::new(vec![ev(0, "b0"), ev(5, "b5"), ev(9, "b9")]);
        let mut m = MergedSource::new(vec![Box::new(a), Box::new(b)]);
        let mut names = Vec::new();
        while let Some(e) = m.next_event().unwrap() {
            let InputEvent::RemoveNode { name } = e.event else {
                panic!()
            };
            names.push(name);
        }
        assert_eq!(names, ["b0", "a1", "a5", "a5b", "b5", "b9"]);
    }
}
