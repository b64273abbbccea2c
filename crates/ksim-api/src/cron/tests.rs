//! robfig/cron v3's own test tables (`parser_test.go` `TestRange`, `TestParseScheduleErrors`,
//! `TestStandardSpecSchedule`; `spec_test.go` `TestNext`), ported as facts: inputs and the
//! expected bits, errors or next instants. Six-field (seconds) rows are written in the five
//! fields of the standard parser with the seconds field `0`.

use super::*;

fn rfc(s: &str) -> i64 {
    DateTime::parse_from_rfc3339(s)
        .expect("test time")
        .timestamp()
}

#[test]
fn get_range_matches_robfig_table() {
    let b = |min, max| Bounds {
        min,
        max,
        names: &[],
    };
    let ok: &[(&str, u32, u32, u64)] = &[
        ("5", 0, 7, 1 << 5),
        ("0", 0, 7, 1 << 0),
        ("7", 0, 7, 1 << 7),
        ("5-5", 0, 7, 1 << 5),
        ("5-6", 0, 7, 1 << 5 | 1 << 6),
        ("5-7", 0, 7, 1 << 5 | 1 << 6 | 1 << 7),
        ("5-6/2", 0, 7, 1 << 5),
        ("5-7/2", 0, 7, 1 << 5 | 1 << 7),
        ("5-7/1", 0, 7, 1 << 5 | 1 << 6 | 1 << 7),
        ("*", 1, 3, 1 << 1 | 1 << 2 | 1 << 3 | STAR),
        ("*/2", 1, 3, 1 << 1 | 1 << 3),
    ];
    for (expr, min, max, want) in ok {
        assert_eq!(get_range(expr, &b(*min, *max)), Ok(*want), "{expr}");
    }
    let bad: &[(&str, u32, u32, &str)] = &[
        ("5--5", 0, 0, "too many hyphens"),
        ("jan-x", 0, 0, "failed to parse int from"),
        ("2-x", 1, 5, "failed to parse int from"),
        ("*/-12", 0, 0, "negative number"),
        ("*//2", 0, 0, "too many slashes"),
        ("1", 3, 5, "below minimum"),
        ("6", 3, 5, "above maximum"),
        (
            "5-3",
            3,
            5,
            "beginning of range (5) beyond end of range (3)",
        ),
        ("*/0", 0, 0, "should be a positive number"),
    ];
    for (expr, min, max, want) in bad {
        let err = get_range(expr, &b(*min, *max)).unwrap_err();
        assert!(err.contains(want), "{expr}: {err}");
    }
}

#[test]
fn standard_parser_accepts_and_refuses_as_robfig() {
    for (spec, want) in [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        (
            "0 0 * * * *",
            "expected exactly 5 fields, found 6: [0 0 * * * *]",
        ),
        ("@every Xm", "failed to parse duration @every Xm"),
        ("@unrecognized", "unrecognized descriptor: @unrecognized"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        // Quartz extensions robfig does not know.
        (
            "0 0 L * *",
            "failed to parse int from L: strconv.Atoi: parsing \"L\": invalid syntax",
        ),
        (
            "0 0 * * 5#3",
            "failed to parse int from 5#3: strconv.Atoi: parsing \"5#3\": invalid syntax",
        ),
        ("0 0 * * 5L", "failed to parse int from 5L"),
        ("0 0 15W * *", "failed to parse int from 15W"),
        (
            "TZ=Nowhere/Land 0 0 * * *",
            "provided bad location Nowhere/Land",
        ),
    ] {
        let err = Schedule::parse(spec).unwrap_err();
        assert!(err.starts_with(want), "{spec:?}: {err}");
    }
    for spec in [
        "*/5 * * * *",
        "0 9-17 * * mon-fri",
        "0 0 1 JAN,jul ?",
        "*/61 * * * *",
        "@every 90m",
        "@every 1h30m",
        "@hourly",
        "@midnight",
        "@annually",
        "CRON_TZ=Europe/Paris 0 3 * * *",
        "TZ=UTC 0 3 * * *",
    ] {
        assert!(Schedule::parse(spec).is_ok(), "{spec}");
    }
}

#[test]
fn descriptors_and_every_step_as_robfig() {
    let t0 = rfc("2012-07-09T14:45:00Z");
    let n = |s: &str, t| Schedule::parse(s).unwrap().next(t);
    assert_eq!(n("@every 90m", t0), Some(t0 + 5400));
    assert_eq!(n("@every 1.5s", t0), Some(t0 + 1));
    assert_eq!(n("@every 100ms", t0), Some(t0 + 1), "at least one second");
    assert_eq!(n("@hourly", t0), Some(rfc("2012-07-09T15:00:00Z")));
    assert_eq!(n("@daily", t0), Some(rfc("2012-07-10T00:00:00Z")));
    // 2012-07-09 is a Monday: @weekly is Sunday midnight.
    assert_eq!(n("@weekly", t0), Some(rfc("2012-07-15T00:00:00Z")));
    assert_eq!(n("@monthly", t0), Some(rfc("2012-08-01T00:00:00Z")));
    assert_eq!(n("@yearly", t0), Some(rfc("2013-01-01T00:00:00Z")));
}

#[test]
fn next_matches_robfig_spec_test() {
    let rows: &[(&str, &str, Option<&str>)] = &[
        (
            "2012-07-09T14:45:00Z",
            "0/15 * * * *",
            Some("2012-07-09T15:00:00Z"),
        ),
        (
            "2012-07-09T14:59:00Z",
            "0/15 * * * *",
            Some("2012-07-09T15:00:00Z"),
        ),
        (
            "2012-07-09T14:59:59Z",
            "0/15 * * * *",
            Some("2012-07-09T15:00:00Z"),
        ),
        // Wrap around hours, days, months, years.
        (
            "2012-07-09T15:45:00Z",
            "20-35/15 * * * *",
            Some("2012-07-09T16:20:00Z"),
        ),
        (
            "2012-07-09T23:46:00Z",
            "*/15 * * * *",
            Some("2012-07-10T00:00:00Z"),
        ),
        (
            "2012-07-09T23:45:00Z",
            "20-35/15 * * * *",
            Some("2012-07-10T00:20:00Z"),
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 9 Apr-Oct ?",
            Some("2012-08-09T00:00:00Z"),
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 */5 Apr,Aug,Oct Mon",
            Some("2012-08-01T00:00:00Z"),
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 */5 Oct Mon",
            Some("2012-10-01T00:00:00Z"),
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 * Feb Mon",
            Some("2013-02-04T00:00:00Z"),
        ),
        (
            "2012-07-09T23:35:00Z",
            "0 0 * Feb Mon/2",
            Some("2013-02-01T00:00:00Z"),
        ),
        (
            "2012-12-31T23:59:45Z",
            "* * * * *",
            Some("2013-01-01T00:00:00Z"),
        ),
        // Leap year.
        (
            "2012-07-09T23:35:00Z",
            "0 0 29 Feb ?",
            Some("2016-02-29T00:00:00Z"),
        ),
        // Daylight saving time 2am EST (-5) -> 3am EDT (-4).
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 30 2 11 Mar ?",
            Some("2013-03-11T02:30:00-04:00"),
        ),
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 0 * * * ?",
            Some("2012-03-11T01:00:00-05:00"),
        ),
        (
            "2012-03-11T01:00:00-05:00",
            "TZ=America/New_York 0 * * * ?",
            Some("2012-03-11T03:00:00-04:00"),
        ),
        (
            "2012-03-11T03:00:00-04:00",
            "TZ=America/New_York 0 * * * ?",
            Some("2012-03-11T04:00:00-04:00"),
        ),
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 0 1 * * ?",
            Some("2012-03-11T01:00:00-05:00"),
        ),
        (
            "2012-03-11T01:00:00-05:00",
            "TZ=America/New_York 0 1 * * ?",
            Some("2012-03-12T01:00:00-04:00"),
        ),
        // The 2am job is skipped on the day 2am does not exist.
        (
            "2012-03-11T00:00:00-05:00",
            "TZ=America/New_York 0 2 * * ?",
            Some("2012-03-12T02:00:00-04:00"),
        ),
        // Daylight saving time 2am EDT (-4) -> 1am EST (-5).
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 30 2 04 Nov ?",
            Some("2012-11-04T02:30:00-05:00"),
        ),
        (
            "2012-11-04T01:45:00-04:00",
            "TZ=America/New_York 30 1 04 Nov ?",
            Some("2012-11-04T01:30:00-05:00"),
        ),
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 * * * ?",
            Some("2012-11-04T01:00:00-04:00"),
        ),
        (
            "2012-11-04T01:00:00-04:00",
            "TZ=America/New_York 0 * * * ?",
            Some("2012-11-04T01:00:00-05:00"),
        ),
        (
            "2012-11-04T01:00:00-05:00",
            "TZ=America/New_York 0 * * * ?",
            Some("2012-11-04T02:00:00-05:00"),
        ),
        // The 1am job runs twice.
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 1 * * ?",
            Some("2012-11-04T01:00:00-04:00"),
        ),
        (
            "2012-11-04T01:00:00-04:00",
            "TZ=America/New_York 0 1 * * ?",
            Some("2012-11-04T01:00:00-05:00"),
        ),
        (
            "2012-11-04T01:00:00-05:00",
            "TZ=America/New_York 0 1 * * ?",
            Some("2012-11-05T01:00:00-05:00"),
        ),
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 2 * * ?",
            Some("2012-11-04T02:00:00-05:00"),
        ),
        (
            "2012-11-04T02:00:00-05:00",
            "TZ=America/New_York 0 2 * * ?",
            Some("2012-11-05T02:00:00-05:00"),
        ),
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 3 * * ?",
            Some("2012-11-04T03:00:00-05:00"),
        ),
        (
            "2012-11-04T03:00:00-05:00",
            "TZ=America/New_York 0 3 * * ?",
            Some("2012-11-05T03:00:00-05:00"),
        ),
        // Unsatisfiable.
        ("2012-07-09T23:35:00Z", "0 0 30 Feb ?", None),
        ("2012-07-09T23:35:00Z", "0 0 31 Apr ?", None),
        // Monthly job.
        (
            "2012-11-04T00:00:00-04:00",
            "TZ=America/New_York 0 3 3 * ?",
            Some("2012-12-03T03:00:00-05:00"),
        ),
        // Midnight does not exist on a daylight-saving day (robfig issue 157).
        (
            "2018-10-17T05:00:00-04:00",
            "TZ=America/Sao_Paulo 0 9 10 * ?",
            Some("2018-11-10T06:00:00-05:00"),
        ),
        (
            "2018-02-14T05:00:00-05:00",
            "TZ=America/Sao_Paulo 0 9 22 * ?",
            Some("2018-02-22T07:00:00-05:00"),
        ),
    ];
    for (from, spec, want) in rows {
        let s = Schedule::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        // robfig's Next is strictly after `from`; the table's `from` instants are whole seconds.
        assert_eq!(s.next(rfc(from)), want.map(rfc), "{spec} after {from}");
    }
}
