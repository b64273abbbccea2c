//! [`SortedMap`]: the map behind [`Labels`](crate::meta::Labels) and
//! [`ResourceList`](crate::core::ResourceList) — a vector of `(key, value)` pairs kept sorted
//! by key, with the part of `BTreeMap`'s interface ksim uses, and its order, equality,
//! hashing, `Debug` and serde forms.
//!
//! Why not `BTreeMap`: a pod carries a handful of labels and two or three requests, and a
//! `BTreeMap` allocates an eleven-slot leaf for even one entry (≈ 540 bytes for one label,
//! ≈ 620 for `cpu` and `memory`), which is most of a pod's heap in a large replay, and walks
//! its nodes to drop. A sorted vector holds exactly its entries in one allocation and drops
//! them with a slice walk. Lookups are a binary search over a few entries; an insertion
//! shifts at most a few. (`litemap` is the same idea, but with its own `Debug` and serde
//! forms; this one keeps `BTreeMap`'s so that nothing a user sees changes.)

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A map ordered by key, stored as a sorted vector (see the module doc).
#[derive(Clone, PartialEq, Eq)]
pub struct SortedMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap {
            entries: Vec::new(),
        }
    }
}

impl<K, V> SortedMap<K, V> {
    /// An empty map (no allocation).
    pub const fn new() -> Self {
        SortedMap {
            entries: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter {
            inner: self.entries.iter(),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator + Clone {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + Clone {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Removes and returns the entry with the smallest key.
    pub fn pop_first(&mut self) -> Option<(K, V)> {
        if self.entries.is_empty() {
            None
        } else {
            Some(self.entries.remove(0))
        }
    }

    /// Keeps the entries for which `f` is true, in order.
    pub fn retain(&mut self, mut f: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| f(k, v));
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// Where `key` is (`Ok`) or would go (`Err`).
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.find(key) {
            Ok(i) => Some(&mut self.entries[i].1),
            Err(_) => None,
        }
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// Sets `key`'s value; the old value if there was one (the key kept is the old one, as
    /// `BTreeMap` keeps it).
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        // Entries built in key order (decoding, generators) append.
        if self.entries.last().is_none_or(|(last, _)| *last < key) {
            self.entries.push((key, value));
            return None;
        }
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// `key`'s entry, to read, insert or change in place.
    pub fn entry(&mut self, key: K) -> Entry<'_, K, V> {
        match self.find(&key) {
            Ok(index) => Entry::Occupied(OccupiedEntry { map: self, index }),
            Err(index) => Entry::Vacant(VacantEntry {
                map: self,
                index,
                key,
            }),
        }
    }

    /// From pairs in any order; for equal keys the last pair wins, as inserting them one by
    /// one into a `BTreeMap` does.
    fn from_pairs(mut pairs: Vec<(K, V)>) -> Self {
        if !pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable: equal keys keep their input order, so the last of a run is the last given.
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out: Vec<(K, V)> = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                match out.last_mut() {
                    Some(last) if last.0 == k => last.1 = v,
                    _ => out.push((k, v)),
                }
            }
            pairs = out;
        }
        SortedMap { entries: pairs }
    }
}

/// A view into one key's place in a [`SortedMap`] (`BTreeMap`'s `Entry`).
pub enum Entry<'a, K, V> {
    Occupied(OccupiedEntry<'a, K, V>),
    Vacant(VacantEntry<'a, K, V>),
}

pub struct OccupiedEntry<'a, K, V> {
    map: &'a mut SortedMap<K, V>,
    index: usize,
}

pub struct VacantEntry<'a, K, V> {
    map: &'a mut SortedMap<K, V>,
    index: usize,
    key: K,
}

impl<'a, K, V> Entry<'a, K, V> {
    pub fn or_insert(self, default: V) -> &'a mut V {
        self.or_insert_with(|| default)
    }

    pub fn or_insert_with(self, default: impl FnOnce() -> V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(default()),
        }
    }

    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }
}

impl<'a, K, V> OccupiedEntry<'a, K, V> {
    pub fn into_mut(self) -> &'a mut V {
        &mut self.map.entries[self.index].1
    }
}

impl<'a, K, V> VacantEntry<'a, K, V> {
    pub fn insert(self, value: V) -> &'a mut V {
        self.map.entries.insert(self.index, (self.key, value));
        &mut self.map.entries[self.index].1
    }
}

/// Iterator over `(&K, &V)` in key order.
#[derive(Clone)]
pub struct Iter<'a, K, V> {
    inner: std::slice::Iter<'a, (K, V)>,
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (k, v))
    }
}

impl<K, V> ExactSizeIterator for Iter<'_, K, V> {}

impl<'a, K, V> IntoIterator for &'a SortedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SortedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        SortedMap::from_pairs(iter.into_iter().collect())
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for SortedMap<K, V> {
    fn from(pairs: [(K, V); N]) -> Self {
        SortedMap::from_pairs(Vec::from(pairs))
    }
}

impl<K: Ord, V> Extend<(K, V)> for SortedMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K, Q, V> std::ops::Index<&Q> for SortedMap<K, V>
where
    K: Borrow<Q> + Ord,
    Q: Ord + ?Sized,
{
    type Output = V;

    /// The value of `key`; panics when absent, as `BTreeMap`'s `Index` does.
    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry found for key")
    }
}

/// As `BTreeMap`'s: the length, then each entry.
impl<K: Hash, V: Hash> Hash for SortedMap<K, V> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.entries.len());
        for (k, v) in &self.entries {
            (k, v).hash(state);
        }
    }
}

/// As `BTreeMap`'s: `{k: v, ...}`.
impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for SortedMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Serialize, V: Serialize> Serialize for SortedMap<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, K, V> Deserialize<'de> for SortedMap<K, V>
where
    K: Ord + Deserialize<'de>,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(PhantomData<(K, V)>);

        impl<'de, K, V> Visitor<'de> for MapVisitor<K, V>
        where
            K: Ord + Deserialize<'de>,
            V: Deserialize<'de>,
        {
            type Value = SortedMap<K, V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                // Size hints come from the input: capped so that a hostile one cannot
                // reserve much.
                let mut pairs = Vec::with_capacity(access.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = access.next_entry()? {
                    pairs.push(entry);
                }
                Ok(SortedMap::from_pairs(pairs))
            }
        }

        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u8),
        Remove(u8),
        Entry(u8, u8),
        Retain(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..12, any::<u8>()).prop_map(|(k, v)| Op::Insert(k, v)),
            (0u8..12).prop_map(Op::Remove),
            (0u8..12, any::<u8>()).prop_map(|(k, v)| Op::Entry(k, v)),
            (1u8..4).prop_map(Op::Retain),
        ]
    }

    fn hash_of<T: Hash>(t: &T) -> u64 {
        // A fixed hasher: the same value must hash the same for both maps.
        let mut h = std::hash::DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    proptest! {
        /// Every operation answers as `BTreeMap`'s does, and the maps read the same
        /// afterwards: entries in order, `Debug`, JSON and hash.
        #[test]
        fn behaves_as_a_btree_map(ops in proptest::collection::vec(op(), 0..60),
                                  pairs in proptest::collection::vec((0u8..12, any::<u8>()), 0..20)) {
            let mut ours: SortedMap<String, u8> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            let mut theirs: BTreeMap<String, u8> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            for op in ops {
                match op {
                    Op::Insert(k, v) => prop_assert_eq!(ours.insert(k.to_string(), v), theirs.insert(k.to_string(), v)),
                    Op::Remove(k) => prop_assert_eq!(ours.remove(k.to_string().as_str()), theirs.remove(k.to_string().as_str())),
                    Op::Entry(k, v) => {
                        *ours.entry(k.to_string()).or_insert(v) ^= 1;
                        *theirs.entry(k.to_string()).or_insert(v) ^= 1;
                    }
                    Op::Retain(m) => {
                        ours.retain(|_, v| *v % m == 0);
                        theirs.retain(|_, v| *v % m == 0);
                    }
                }
                prop_assert_eq!(ours.len(), theirs.len());
            }
            prop_assert!(ours.iter().eq(theirs.iter()));
            prop_assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
            let json = serde_json::to_string(&ours).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(&theirs).unwrap());
            let back: SortedMap<String, u8> = serde_json::from_str(&json).unwrap();
            prop_assert!(back == ours);
            prop_assert_eq!(hash_of(&ours), hash_of(&theirs));
        }
    }

    #[test]
    fn decoding_keeps_the_last_of_repeated_keys_as_btree_map_does() {
        let text = r#"{"b":"1","a":"2","b":"3"}"#;
        let ours: SortedMap<String, String> = serde_json::from_str(text).unwrap();
        let theirs: BTreeMap<String, String> = serde_json::from_str(text).unwrap();
        assert!(ours.iter().eq(theirs.iter()));
        assert_eq!(ours.get("b").map(String::as_str), Some("3"));
    }

    #[test]
    fn decoding_a_non_map_names_what_was_expected() {
        let err = serde_json::from_str::<SortedMap<String, String>>("[1]").unwrap_err();
        assert!(err.to_string().contains("a map"), "{err}");
    }
}
