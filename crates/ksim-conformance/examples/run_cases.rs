//! Runs the cases in the given directories and prints the differences (a debugging aid; the
//! `ksim conformance` command is the user-facing runner).
fn main() {
    let mut failed = 0;
    let mut passed = 0;
    for dir in std::env::args().skip(1) {
        let outcomes = match ksim_conformance::run_dir(std::path::Path::new(&dir), None) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        for o in outcomes {
            if o.passed() {
                passed += 1;
            } else {
                failed += 1;
                println!("FAIL {}: {}", o.name, o.differences.join("\n    "));
            }
        }
    }
    println!("{passed} passed, {failed} failed");
}
