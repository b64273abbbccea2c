//! The live pods by key (`namespace/name`), without a copy of the key: a map from the key's
//! hash ([`super::pods::key_hash`]) to the pod's slot, the key itself read from the slot's
//! object when a lookup must tell keys apart.
//!
//! A map keyed by the key strings held a second copy of every live pod's key (an allocation
//! per pod), and each removal compared the stored string, a cache miss a pod; here a pod's
//! removal, which knows its slot, compares slot numbers. Keys whose hashes collide are all
//! kept (the first in `first`, the rest in `more`), so lookups answer exactly as a map by key.

use rustc_hash::FxHashMap;

use super::PodId;

#[derive(Debug, Clone, Default)]
pub(super) struct LiveMap {
    /// Key hash → a live pod whose key has that hash.
    first: FxHashMap<u64, PodId>,
    /// Key hash → the other live pods whose keys have that hash (collisions), in insertion
    /// order.
    more: FxHashMap<u64, Vec<PodId>>,
}

impl LiveMap {
    /// The live pod whose key is `key` (its hash `h`); `key_of` gives a live pod's key.
    pub(super) fn get<'a>(
        &self,
        h: u64,
        key: &str,
        key_of: impl Fn(PodId) -> &'a str,
    ) -> Option<&PodId> {
        let id = self.first.get(&h)?;
        if key_of(*id) == key {
            return Some(id);
        }
        self.more.get(&h)?.iter().find(|&&id| key_of(id) == key)
    }

    /// Adds pod `id` under its key's hash `h` (the caller knows no live pod has the key).
    pub(super) fn insert(&mut self, h: u64, id: PodId) {
        use std::collections::hash_map::Entry;
        match self.first.entry(h) {
            Entry::Vacant(e) => {
                e.insert(id);
            }
            Entry::Occupied(_) => self.more.entry(h).or_default().push(id),
        }
    }

    /// Removes pod `id`, filed under its key's hash `h`. Returns whether it was there.
    pub(super) fn remove(&mut self, h: u64, id: PodId) -> bool {
        use std::collections::hash_map::Entry;
        let Entry::Occupied(mut e) = self.first.entry(h) else {
            return false;
        };
        if *e.get() == id {
            // The first of the others with that hash takes its place.
            match self.more.get_mut(&h) {
                Some(v) if !v.is_empty() => {
                    *e.get_mut() = v.remove(0);
                    if v.is_empty() {
                        self.more.remove(&h);
                    }
                }
                _ => {
                    e.remove();
                }
            }
            return true;
        }
        let Some(v) = self.more.get_mut(&h) else {
            return false;
        };
        let Some(k) = v.iter().position(|&x| x == id) else {
            return false;
        };
        v.remove(k);
        if v.is_empty() {
            self.more.remove(&h);
        }
        true
    }

    /// Every live pod (in no meaningful order).
    pub(super) fn ids(&self) -> impl Iterator<Item = &PodId> + '_ {
        self.first.values().chain(self.more.values().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// Create a pod with key number `k` (skipped when that key is live).
        Insert(u8),
        /// Remove the live pod with key number `k` (skipped when none).
        Remove(u8),
        /// Look key number `k` up.
        Get(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..24).prop_map(Op::Insert),
            (0u8..24).prop_map(Op::Remove),
            (0u8..30).prop_map(Op::Get),
        ]
    }

    proptest! {
        /// Against a map by key string, with a hash that collides often (`weak`) or the
        /// engine's: lookups, removals and the set of live pods agree after any sequence.
        #[test]
        fn answers_as_a_map_by_key(ops in proptest::collection::vec(op(), 0..200), weak in any::<bool>()) {
            let hash = |key: &str| if weak { key.len() as u64 % 3 } else { super::super::pods::key_hash(key) };
            let mut model: FxHashMap<String, PodId> = FxHashMap::default();
            let mut live = LiveMap::default();
            // Slot → key of the pod in it (slots are never reused here).
            let mut keys: Vec<String> = Vec::new();
            for op in &ops {
                match *op {
                    Op::Insert(k) => {
                        let key = format!("ns/{}", "p".repeat(k as usize % 7) + &k.to_string());
                        if model.contains_key(&key) {
                            continue;
                        }
                        let id = keys.len() as PodId;
                        keys.push(key.clone());
                        live.insert(hash(&key), id);
                        model.insert(key, id);
                    }
                    Op::Remove(k) => {
                        let key = format!("ns/{}", "p".repeat(k as usize % 7) + &k.to_string());
                        let Some(id) = model.remove(&key) else {
                            continue;
                        };
                        prop_assert!(live.remove(hash(&key), id));
                        prop_assert!(!live.remove(hash(&key), id));
                    }
                    Op::Get(k) => {
                        let key = format!("ns/{}", "p".repeat(k as usize % 7) + &k.to_string());
                        let got = live.get(hash(&key), &key, |id| keys[id as usize].as_str());
                        prop_assert_eq!(got, model.get(&key));
                    }
                }
                let mut ids: Vec<PodId> = live.ids().copied().collect();
                let mut want: Vec<PodId> = model.values().copied().collect();
                ids.sort_unstable();
                want.sort_unstable();
                prop_assert_eq!(ids, want);
            }
        }
    }
}
