//! # ksim-api
//!
//! The Kubernetes objects ksim understands, as serde types that read the JSON and YAML kubectl
//! writes: [`core::Pod`], [`core::Node`], Services and workload selectors, PodDisruptionBudgets,
//! PriorityClasses, storage objects, label selectors ([`meta::Selector`]), exact
//! `resource.Quantity` parsing ([`quantity::Quantity`]) and the KubeSchedulerConfiguration
//! ([`config::KubeSchedulerConfiguration`]). [`defaults`] applies the API server's defaulting
//! that scheduling depends on; [`load`] reads documents, `kind: List` and multi-document YAML with
//! errors that name the field path. Labels, annotations and resource lists are
//! [`sorted_map::SortedMap`]s: `BTreeMap`'s order and forms (and the part of its interface ksim
//! uses) on a sorted vector, a fraction of the memory for the few entries an object carries.
//!
//! Nothing here schedules: the scheduler crate compiles these objects into its own dense forms.

pub mod admission;
pub mod config;
pub mod core;
pub mod cron;
pub mod defaults;
pub mod json;
pub mod load;
pub mod meta;
pub mod nulls;
pub mod object;
pub mod quantity;
pub mod resource;
pub mod sorted_map;
pub mod storage;
pub mod strict;
pub mod validation;
pub mod version;
pub mod workloads;

pub use crate::core::*;
pub use crate::meta::{LabelSelector, Labels, ObjectMeta, Selector};
pub use crate::quantity::{Quantity, QuantityError};
pub use crate::sorted_map::SortedMap;
