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
    pub skip_filter_plugins: Vec<&'static str>,
    /// Plugins whose PreScore returned Skip: their Score is not run.
    pub skip_score_plugins: Vec<&'static str>,
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
        }
    }
}

impl CycleState {
    pub fn new() -> CycleState {
        CycleState::default()
    }

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        if let Some(e) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            e.1 = Box::new(value);
        } else {
            self.entries.push((key, Box::new(value)));
        }
    }

    pub fn read<T: 'static>(&self, key: &'static str) -> Option<&T> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| (**v).as_any().downcast_ref::<T>())
    }

    pub fn read_mut<T: 'static>(&mut self, key: &'static str) -> Option<&mut T> {
        self.entries
            .iter_mut()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| (**v).as_any_mut().downcast_mut::<T>())
    }

    pub fn should_skip_filter(&self, plugin: &str) -> bool {
        self.skip_filter_plugins.contains(&plugin)
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
