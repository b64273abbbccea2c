//! `CycleState`: data a plugin computes in PreFilter/PreScore and reads back per node.
//!
//! Keys are the plugins' static names; a cycle holds a handful of entries, so a linear scan is
//! faster than hashing. Entries are cloneable because preemption and the nominated-pods pass
//! run filters on a copy with pods added or removed.

use std::any::Any;

/// Anything a plugin stores in the cycle state.
pub trait StateData: Any + Send + Sync {
    fn clone_box(&self) -> Box<dyn StateData>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync> StateData for T {
    fn clone_box(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[derive(Default)]
pub struct CycleState {
    entries: Vec<(&'static str, Box<dyn StateData>)>,
    /// Plugins whose PreFilter returned Skip: their Filter is not run.
    skip_filter_plugins: Vec<&'static str>,
    /// Plugins whose PreScore returned Skip: their Score is not run.
    skip_score_plugins: Vec<&'static str>,
    /// `skip_filter_plugins` as a bit set over one plugin list (bit i: the list's i-th plugin is
    /// skipped), and the address of that list. Filter runs once per node, so it tests a bit
    /// instead of comparing names; a different list falls back to the names.
    filter_skip_mask: u64,
    filter_skip_list: usize,
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            entries: self
                .entries
                .iter()
                .map(|(k, v)| (*k, (**v).clone_box()))
                .collect(),
            skip_filter_plugins: self.skip_filter_plugins.clone(),
            skip_score_plugins: self.skip_score_plugins.clone(),
            filter_skip_mask: self.filter_skip_mask,
            filter_skip_list: self.filter_skip_list,
        }
    }
}

/// Whether two static keys are the same constant (same address and length): the usual case,
/// since keys are string constants; checked for every entry before any byte comparison.
#[inline]
fn same_ptr(a: &'static str, b: &'static str) -> bool {
    a.as_ptr() == b.as_ptr() && a.len() == b.len()
}

impl CycleState {
    pub fn new() -> CycleState {
        CycleState::default()
    }

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        if let Some(i) = self.position(key) {
            let e = &mut self.entries[i];
            e.1 = Box::new(value);
        } else {
            self.entries.push((key, Box::new(value)));
        }
    }

    /// The entry of `key`: by address first, then (a key spelled by another constant) by
    /// bytes.
    #[inline]
    fn position(&self, key: &'static str) -> Option<usize> {
        self.entries
            .iter()
            .position(|(k, _)| same_ptr(k, key))
            .or_else(|| self.entries.iter().position(|(k, _)| *k == key))
    }

    pub fn read<T: 'static>(&self, key: &'static str) -> Option<&T> {
        let i = self.position(key)?;
        (*self.entries[i].1).as_any().downcast_ref::<T>()
    }

    pub fn read_mut<T: 'static>(&mut self, key: &'static str) -> Option<&mut T> {
        let i = self.position(key)?;
        (*self.entries[i].1).as_any_mut().downcast_mut::<T>()
    }

    pub fn should_skip_filter(&self, plugin: &str) -> bool {
        self.skip_filter_plugins.contains(&plugin)
    }

    /// The plugins whose Filter is skipped (their PreFilter returned Skip).
    pub fn skip_filter_plugins(&self) -> &[&'static str] {
        &self.skip_filter_plugins
    }

    /// The plugins whose Score is skipped (their PreScore returned Skip).
    pub fn skip_score_plugins(&self) -> &[&'static str] {
        &self.skip_score_plugins
    }

    /// Sets the skipped Filter plugins, and their positions in `filters` (the framework's
    /// Filter list) for [`Self::filter_skipped`].
    pub fn set_skip_filter_plugins<P>(
        &mut self,
        skip: Vec<&'static str>,
        filters: &[P],
        name_of: impl Fn(&P) -> &str,
    ) {
        let mut mask = 0u64;
        let mut list = 0usize;
        if filters.len() <= 64 {
            for (i, f) in filters.iter().enumerate() {
                if skip.contains(&name_of(f)) {
                    mask |= 1 << i;
                }
            }
            list = filters.as_ptr() as usize;
        }
        self.skip_filter_plugins = skip;
        self.filter_skip_mask = mask;
        self.filter_skip_list = list;
    }

    /// Sets the skipped Score plugins.
    pub fn set_skip_score_plugins(&mut self, skip: Vec<&'static str>) {
        self.skip_score_plugins = skip;
    }

    /// Whether the `i`-th plugin of `filters` (named `name`) is skipped: a bit test when
    /// `filters` is the list the skip set was recorded against, else a name lookup.
    #[inline]
    pub fn filter_skipped<'a, P>(
        &self,
        filters: &'a [P],
        i: usize,
        name: impl FnOnce(&'a P) -> &'a str,
    ) -> bool {
        if self.filter_skip_list != 0 && self.filter_skip_list == filters.as_ptr() as usize {
            self.filter_skip_mask & (1 << i) != 0
        } else {
            self.should_skip_filter(name(&filters[i]))
        }
    }

    pub fn should_skip_score(&self, plugin: &str) -> bool {
        self.skip_score_plugins.contains(&plugin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_clone() {
        let mut s = CycleState::new();
        s.write("A", 5u32);
        s.write("B", vec![1, 2]);
        let c = s.clone();
        *s.read_mut::<u32>("A").unwrap() = 6;
        assert_eq!(c.read::<u32>("A"), Some(&5));
        assert_eq!(s.read::<u32>("A"), Some(&6));
        assert_eq!(c.read::<Vec<i32>>("B"), Some(&vec![1, 2]));
        assert_eq!(c.read::<u64>("A"), None);
    }
}
