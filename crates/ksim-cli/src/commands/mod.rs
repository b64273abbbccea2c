//! One module per subcommand.

pub mod compare;
pub mod conformance;
pub mod import;
pub mod report;
pub mod run;
pub mod validate;
