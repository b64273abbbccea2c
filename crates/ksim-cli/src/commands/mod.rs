//! One module per subcommand.

pub mod bench;
pub mod compare;
pub mod conformance;
pub mod explain;
pub mod fgd;
pub mod fork;
pub mod gen;
pub mod import;
pub mod merge;
pub mod plan;
pub mod report;
pub mod run;
pub mod sweep;
pub mod validate;
pub mod version_args;
