//! Fuzz-style: random junk never panics the readers; it gives errors or nothing.

use ksim_trace::csv_trace::CsvReader;
use ksim_trace::native::parse_event_line;
use ksim_trace::NativeReader;
use proptest::prelude::*;

fn jsonish() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("{\"at\": ".to_string()),
        Just("\"kind\": \"CreatePod\"".to_string()),
        Just("\"kind\": \"DeletePod\", \"name\": \"a\"".to_string()),
        Just("\"pod\": {\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": ".to_string()),
        Just("\"node\": {\"metadata\": {}}".to_string()),
        Just("\"runFor\": ".to_string()),
        "-?[0-9]{0,25}(\\.[0-9]{0,5})?(e[0-9]{1,3})?(ms|s|h|Ki|Gi|Ei|m)?".prop_map(|s| s),
        "\"[^\"]{0,8}\"".prop_map(|s| s),
        Just("}".to_string()),
        Just("]".to_string()),
        Just(",".to_string()),
        Just("null".to_string()),
        any::<String>(),
    ];
    prop::collection::vec(atoms, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn native_lines_never_panic(lines in prop::collection::vec(jsonish(), 0..8)) {
        let text = lines.join("\n");
        for l in &lines {
            let _ = parse_event_line(l);
        }
        let mut r = NativeReader::new("junk.jsonl", text.as_bytes());
        let mut n = 0;
        while let Some(x) = r.next_unordered() {
            let _ = x;
            n += 1;
            prop_assert!(n <= text.lines().count() + 1, "one result per line at most");
        }
        let _ = NativeReader::new("junk.jsonl", text.as_bytes()).collect::<Vec<_>>();
    }

    #[test]
    fn native_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = NativeReader::new("junk.jsonl", bytes.as_slice()).collect::<Vec<_>>();
    }

    #[test]
    fn csv_rows_never_panic(rows in prop::collection::vec("[-a-zA-Z0-9=;.,\"# ]{0,40}", 0..8)) {
        let text = format!("at,kind,namespace,name,cpu,memory,gpu,priority,run_for,labels,node_selector,extra\n{}", rows.join("\n"));
        let _ = CsvReader::new("junk.csv", text.as_bytes()).collect::<Vec<_>>();
        let mut r = CsvReader::new("junk.csv", text.as_bytes());
        let mut n = 0;
        while r.next_unordered().is_some() {
            n += 1;
            prop_assert!(n <= text.len() + 2, "the reader terminates");
        }
    }
}
