use super::candidates::aggregate_errors;
use super::*;
use crate::framework::status::Code;

#[test]
fn parses_rfc3339() {
    let cases: &[(&str, Option<i128>)] = &[
        ("1970-01-01T00:00:00Z", Some(0)),
        ("1970-01-01T00:00:01Z", Some(1_000_000_000)),
        ("2024-01-01T00:32:33Z", Some(1_704_069_153_000_000_000)),
        ("2024-01-01T01:32:33+01:00", Some(1_704_069_153_000_000_000)),
        ("2023-12-31T23:32:33-01:00", Some(1_704_069_153_000_000_000)),
        ("2024-01-01T00:32:33.5Z", Some(1_704_069_153_500_000_000)),
        (
            "2024-01-01T00:32:33.123456789123Z",
            Some(1_704_069_153_123_456_789),
        ),
        ("1969-12-31T23:59:59Z", Some(-1_000_000_000)),
        ("2024-02-29T00:00:00Z", Some(1_709_164_800_000_000_000)),
        ("2024-01-01", None),
        ("2024-01-01T00:32:33", None),
        ("2024-13-01T00:32:33Z", None),
        ("2024-01-01T00:32:33.Z", None),
        ("garbage-garbage-garbage", None),
    ];
    for (s, want) in cases {
        assert_eq!(parse_rfc3339_nanos(s), *want, "{s}");
    }
}

#[test]
fn start_time_order() {
    let a = StartTime::At(5);
    let b = StartTime::At(6);
    assert!(a.before(b));
    assert!(!b.before(a));
    assert!(b.before(StartTime::NotStarted));
    assert!(!StartTime::NotStarted.before(StartTime::NotStarted));
    assert!(more_important((2, b), (1, a)));
    assert!(more_important((1, a), (1, b)));
    assert!(!more_important((1, a), (1, a)));
}

#[test]
fn aggregates_errors_like_utilerrors() {
    assert_eq!(aggregate_errors(&[]), None);
    assert_eq!(aggregate_errors(&["a".into()]), Some("a".into()));
    assert_eq!(
        aggregate_errors(&["a".into(), "a".into()]),
        Some("a".into())
    );
    assert_eq!(
        aggregate_errors(&["a".into(), "b".into(), "a".into()]),
        Some("[a, b]".into())
    );
}

#[test]
fn nodes_for_status_code_uses_absent_status() {
    let mut m = NodeToStatus::new(4);
    m.set(0, Status::unschedulable("x"));
    m.set(2, Status::unresolvable("y"));
    assert_eq!(nodes_for_status_code(&m, 4, Code::Unschedulable), vec![0]);
    m.absent = Some(Status::unschedulable("pre"));
    assert_eq!(
        nodes_for_status_code(&m, 4, Code::Unschedulable),
        vec![0, 1, 3]
    );
}

#[test]
fn go_sort_small_is_stable_insertion_sort() {
    let mut v: Vec<(i32, usize)> = [3, 1, 2, 1, 3, 2, 1]
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i))
        .collect();
    go_sort_slice(&mut v, |a, b| a.0 < b.0);
    let idx: Vec<usize> = v.iter().map(|p| p.1).collect();
    assert_eq!(idx, vec![1, 3, 6, 2, 5, 0, 4]);
}

/// Keys of the test vectors: pattern 0 random with duplicates, 1 descending with
/// duplicates, 2 ascending with a few out-of-place keys.
fn gen_keys(n: usize, modulus: u64, pattern: u8) -> Vec<(u64, usize)> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ n as u64;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = match pattern {
                0 => x % modulus,
                1 => (n - i) as u64 / modulus,
                _ => {
                    if x.is_multiple_of(17) {
                        x % n as u64
                    } else {
                        i as u64 / modulus
                    }
                }
            };
            (k, i)
        })
        .collect()
}

/// The order Go's `sort.Slice` leaves equal keys in, pinned by a checksum over the
/// resulting permutation. The vectors were produced by Go's `pdqsort_func` (the `sort`
/// package's code with the xorshift of current Go releases) on the same keys.
#[test]
fn go_sort_matches_go_permutations() {
    let vectors: &[(u8, usize, u64, u64)] = &[
        (0, 13, 1, 7747485329106677980),
        (0, 13, 2, 18040114560811316662),
        (0, 13, 7, 15016508814556193118),
        (0, 13, 1000, 7501546983881498874),
        (0, 50, 1, 675778796827664818),
        (0, 50, 2, 10002671023949315902),
        (0, 50, 7, 7169503235696083434),
        (0, 50, 1000, 2258585841240984026),
        (0, 64, 1, 11168009083496242752),
        (0, 64, 2, 3632236397476223910),
        (0, 64, 7, 16324795218510385946),
        (0, 64, 1000, 10008288227133295446),
        (0, 257, 1, 8373525488035867904),
        (0, 257, 2, 12493036861044054546),
        (0, 257, 7, 14484857796608881064),
        (0, 257, 1000, 16825817270794632410),
        (0, 1000, 1, 13593816098738348456),
        (0, 1000, 2, 6462986526089924574),
        (0, 1000, 7, 16139715253742127256),
        (0, 1000, 1000, 13134718231955837540),
        (1, 13, 1, 3088711116598535404),
        (1, 13, 2, 17359448322413799990),
        (1, 13, 7, 2609547746539956656),
        (1, 13, 1000, 7747485329106677980),
        (1, 50, 1, 15193241930186911972),
        (1, 50, 2, 8266228941121786886),
        (1, 50, 7, 18023675907019682582),
        (1, 50, 1000, 675778796827664818),
        (1, 64, 1, 3425424507404188032),
        (1, 64, 2, 15236166644349743680),
        (1, 64, 7, 17234513953041865076),
        (1, 64, 1000, 11168009083496242752),
        (1, 257, 1, 3120337032494055680),
        (1, 257, 2, 17633947363909602204),
        (1, 257, 7, 14690175960043987168),
        (1, 257, 1000, 8373525488035867904),
        (1, 1000, 1, 13413976373993275376),
        (1, 1000, 2, 2063051763858218248),
        (1, 1000, 7, 8728674068446943524),
        (1, 1000, 1000, 11022114202897162320),
        (2, 13, 1, 7140795155711303904),
        (2, 13, 2, 2304550460685023058),
        (2, 13, 7, 14172582177874877024),
        (2, 13, 1000, 14172582177874877024),
        (2, 50, 1, 12862105779656550516),
        (2, 50, 2, 2455731601838947862),
        (2, 50, 7, 12816525438150176330),
        (2, 50, 1000, 10080251874906316404),
        (2, 64, 1, 15082030621254283192),
        (2, 64, 2, 8831006768112269010),
        (2, 64, 7, 5801530864505246344),
        (2, 64, 1000, 5801530864505246344),
        (2, 257, 1, 16311725867202732148),
        (2, 257, 2, 5431035718361482864),
        (2, 257, 7, 1717812545716331536),
        (2, 257, 1000, 14920847119875532294),
        (2, 1000, 1, 5066272415570965006),
        (2, 1000, 2, 13994476417512294512),
        (2, 1000, 7, 7676910725519878226),
        (2, 1000, 1000, 16792382553830089766),
    ];
    for &(pattern, n, modulus, want) in vectors {
        let mut v = gen_keys(n, modulus, pattern);
        go_sort_slice(&mut v, |a, b| a.0 < b.0);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
        let sum = v.iter().enumerate().fold(0u64, |acc, (i, it)| {
            acc.wrapping_mul(1_000_003)
                .wrapping_add(it.1 as u64)
                .wrapping_add(i as u64)
        });
        assert_eq!(sum, want, "pattern {pattern} n {n} mod {modulus}");
    }
}

proptest::proptest! {
    /// Up to 12 elements `go_sort_slice` (which returns at once when no element is less than
    /// the one before it) leaves the elements as Go's insertion sort does.
    #[test]
    fn go_sort_small_is_the_insertion_sort(keys in proptest::collection::vec(0u8..4, 0..13)) {
        let mut got: Vec<(u8, usize)> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let mut want = got.clone();
        go_sort_slice(&mut got, |a, b| a.0 < b.0);
        for i in 1..want.len() {
            let mut j = i;
            while j > 0 && want[j].0 < want[j - 1].0 {
                want.swap(j, j - 1);
                j -= 1;
            }
        }
        proptest::prop_assert_eq!(got, want);
    }
}
