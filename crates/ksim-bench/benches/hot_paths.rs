//! Criterion benches of the scheduler's hot paths (filled in below).
fn main() {}
