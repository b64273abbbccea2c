//! The Job controller's pure rules, each as upstream writes it: the pod failure backoff
//! (`backoff_utils.go` `getRemainingTimeForFailuresCount`), `podFailurePolicy` matching
//! (`pod_failure_policy.go` `matchPodFailurePolicy`) and `successPolicy` (`success_policy.go`
//! `matchSuccessPolicy`). Their upstream unit-test tables are ported below as facts.

use std::collections::BTreeSet;

use ksim_api::workloads::{parse_index_set, PodFailurePolicy, SuccessPolicy};

use crate::time::{SimDuration, SimTime};

/// `getRemainingTimeForFailuresCount`: how long a replacement still waits after `failures`
/// failures since the last success, the last at `last`: `base × 2^(failures-1)` capped at
/// `max`, less the time since.
pub(crate) fn remaining_backoff(
    failures: i32,
    last: Option<SimTime>,
    now: SimTime,
    base: SimDuration,
    max: SimDuration,
) -> SimDuration {
    let Some(last) = last.filter(|_| failures > 0) else {
        return SimDuration::ZERO;
    };
    let mut d = base.micros();
    for _ in 1..failures {
        d = d.saturating_mul(2);
        if d >= max.micros() {
            d = max.micros();
            break;
        }
    }
    let elapsed = now.since(last).micros();
    if d < elapsed {
        SimDuration::ZERO
    } else {
        SimDuration::from_micros(d - elapsed)
    }
}

/// A `podFailurePolicy` rule's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    FailJob,
    FailIndex,
    Ignore,
    Count,
}

/// What a failed pod shows the policy: its containers' names and exit code (`None`: they were
/// killed, no exit code ksim knows), and its conditions `(type, status)`.
pub(crate) struct FailedPod<'a> {
    pub containers: &'a [&'a str],
    pub exit_code: Option<i32>,
    pub conditions: &'a [(&'a str, &'a str)],
}

/// `matchPodFailurePolicy`: the first rule that matches, with upstream's message for a
/// `FailJob` rule; `None` when none does (the failure counts).
pub(crate) fn match_pod_failure_policy(
    p: &PodFailurePolicy,
    pod: &FailedPod<'_>,
    pod_name: &str,
) -> Option<(Action, String)> {
    for (i, rule) in p.rules.iter().enumerate() {
        let action = match rule.action.as_str() {
            "FailJob" => Action::FailJob,
            "FailIndex" => Action::FailIndex,
            "Ignore" => Action::Ignore,
            "Count" => Action::Count,
            _ => continue,
        };
        if let Some(req) = &rule.on_exit_codes {
            // Exit code 0 never matches (`getMatchingContainerFromList`).
            let Some(code) = pod.exit_code.filter(|c| *c != 0) else {
                continue;
            };
            let container = pod.containers.iter().find(|n| {
                req.container_name.as_deref().is_none_or(|want| want == **n)
                    && match req.operator.as_str() {
                        "In" => req.values.contains(&code),
                        "NotIn" => !req.values.contains(&code),
                        _ => false,
                    }
            });
            if let Some(name) = container {
                return Some((
                    action,
                    format!(
                        "Container {name} for pod {pod_name} failed with exit code {code} \
                         matching {} rule at index {i}",
                        rule.action
                    ),
                ));
            }
            continue;
        }
        for req in &rule.on_pod_conditions {
            let status = req.status.as_deref().unwrap_or("True");
            if pod
                .conditions
                .iter()
                .any(|(t, s)| *t == req.type_ && *s == status)
            {
                return Some((
                    action,
                    format!(
                        "Pod {pod_name} has condition {} matching {} rule at index {i}",
                        req.type_, rule.action
                    ),
                ));
            }
        }
    }
    None
}

/// `matchSuccessPolicy`: whether a rule is met by the succeeded indexes, `completions` the
/// Job's.
pub(crate) fn success_policy_met(
    p: &SuccessPolicy,
    succeeded: &BTreeSet<i32>,
    completions: i32,
) -> bool {
    p.rules.iter().any(|r| match &r.succeeded_indexes {
        Some(text) => {
            let Ok(set) = parse_index_set(text, completions) else {
                return false;
            };
            let size: i32 = set.iter().map(|(a, b)| b - a + 1).sum();
            let have = set
                .iter()
                .map(|&(a, b)| succeeded.range(a..=b).count() as i32)
                .sum::<i32>();
            have >= r.succeeded_count.unwrap_or(size)
        }
        None => r
            .succeeded_count
            .is_some_and(|n| succeeded.len() as i32 >= n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::workloads::{
        OnExitCodes, OnPodCondition, PodFailurePolicyRule, SuccessPolicyRule,
    };

    fn secs(s: i64) -> SimDuration {
        SimDuration::from_secs(s)
    }

    /// `backoff_utils_test.go` `TestGetRemainingBackoffTime`, with the defaults 10 s / 6 min.
    #[test]
    fn remaining_backoff_matches_upstream_table() {
        let now = SimTime::from_secs(10_000);
        let rows: &[(i32, i64, i64)] = &[
            // (failures after the last success, seconds since the last failure, remaining)
            (0, 0, 0),
            (1, 0, 10),
            (1, 5, 5),
            (1, 10, 0),
            (1, 15, 0),
            (2, 0, 20),
            (2, 15, 5),
            (3, 0, 40),
            (5, 0, 160),
            (6, 0, 320),
            (7, 0, 360),
            (7, 60, 300),
            (50, 0, 360),
            (50, 400, 0),
        ];
        for &(n, ago, want) in rows {
            let last = Some(SimTime(now.0 - secs(ago).0));
            assert_eq!(
                remaining_backoff(n, last, now, secs(10), secs(360)),
                secs(want),
                "{n} failures, {ago}s ago"
            );
        }
        assert_eq!(
            remaining_backoff(3, None, now, secs(10), secs(360)),
            SimDuration::ZERO
        );
    }

    fn rule(
        action: &str,
        codes: Option<(&str, &[i32], Option<&str>)>,
        conds: &[(&str, Option<&str>)],
    ) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: codes.map(|(op, v, c)| OnExitCodes {
                container_name: c.map(str::to_string),
                operator: op.into(),
                values: v.to_vec(),
            }),
            on_pod_conditions: conds
                .iter()
                .map(|(t, s)| OnPodCondition {
                    type_: t.to_string(),
                    status: s.map(str::to_string),
                })
                .collect(),
        }
    }

    /// `pod_failure_policy_test.go` `TestMatchPodFailurePolicy`, the rows that fit ksim's pods.
    #[test]
    fn pod_failure_policy_matches_as_upstream() {
        let main = ["main-container"];
        let two = ["main-container", "sidecar"];
        let pol = |rules: Vec<PodFailurePolicyRule>| PodFailurePolicy { rules };
        let exit = |code: i32| FailedPod {
            containers: &main,
            exit_code: Some(code),
            conditions: &[],
        };
        let act = |p: &PodFailurePolicy, f: &FailedPod<'_>| {
            match_pod_failure_policy(p, f, "default/mypod").map(|(a, _)| a)
        };
        // Ignore rule matching the exit code.
        let p = pol(vec![rule("Ignore", Some(("In", &[1, 2, 3], None)), &[])]);
        assert_eq!(act(&p, &exit(2)), Some(Action::Ignore));
        assert_eq!(act(&p, &exit(4)), None, "not matching: counted");
        // FailJob with NotIn; exit code 0 never matches.
        let p = pol(vec![rule(
            "FailJob",
            Some(("NotIn", &[1, 2, 3], None)),
            &[],
        )]);
        assert_eq!(act(&p, &exit(42)), Some(Action::FailJob));
        assert_eq!(act(&p, &exit(2)), None);
        assert_eq!(act(&p, &exit(0)), None);
        let (_, msg) = match_pod_failure_policy(&p, &exit(42), "default/mypod").unwrap();
        assert_eq!(
            msg,
            "Container main-container for pod default/mypod failed with exit code 42 matching \
             FailJob rule at index 0"
        );
        // The first matching rule wins.
        let p = pol(vec![
            rule("Count", Some(("In", &[42], None)), &[]),
            rule("FailJob", Some(("In", &[42], None)), &[]),
        ]);
        assert_eq!(act(&p, &exit(42)), Some(Action::Count));
        // A container name restricts the rule.
        let p = pol(vec![rule(
            "FailJob",
            Some(("In", &[42], Some("sidecar"))),
            &[],
        )]);
        assert_eq!(act(&p, &exit(42)), None);
        let f = FailedPod {
            containers: &two,
            exit_code: Some(42),
            conditions: &[],
        };
        assert_eq!(act(&p, &f), Some(Action::FailJob));
        // Conditions: DisruptionTarget (status True by default) ignored; status must match.
        let p = pol(vec![rule("Ignore", None, &[("DisruptionTarget", None)])]);
        let disrupted = FailedPod {
            containers: &main,
            exit_code: None,
            conditions: &[("DisruptionTarget", "True")],
        };
        assert_eq!(act(&p, &disrupted), Some(Action::Ignore));
        let (_, msg) = match_pod_failure_policy(&p, &disrupted, "default/mypod").unwrap();
        assert_eq!(
            msg,
            "Pod default/mypod has condition DisruptionTarget matching Ignore rule at index 0"
        );
        let p = pol(vec![rule(
            "Ignore",
            None,
            &[("DisruptionTarget", Some("False"))],
        )]);
        assert_eq!(act(&p, &disrupted), None);
        // A killed pod has no exit code: exit-code rules do not match it.
        let p = pol(vec![rule("FailJob", Some(("NotIn", &[0], None)), &[])]);
        assert_eq!(act(&p, &disrupted), None);
    }

    /// `success_policy_test.go` `TestMatchSuccessPolicy`, rows as facts.
    #[test]
    fn success_policy_matches_as_upstream() {
        let set = |v: &[i32]| v.iter().copied().collect::<BTreeSet<i32>>();
        let pol = |rules: Vec<(Option<&str>, Option<i32>)>| SuccessPolicy {
            rules: rules
                .into_iter()
                .map(|(i, c)| SuccessPolicyRule {
                    succeeded_indexes: i.map(str::to_string),
                    succeeded_count: c,
                })
                .collect(),
        };
        // succeededIndexes only: all of them.
        let p = pol(vec![(Some("0-2"), None)]);
        assert!(success_policy_met(&p, &set(&[0, 1, 2]), 10));
        assert!(!success_policy_met(&p, &set(&[0, 1, 3]), 10));
        // succeededCount only.
        let p = pol(vec![(None, Some(3))]);
        assert!(success_policy_met(&p, &set(&[0, 5, 9]), 10));
        assert!(!success_policy_met(&p, &set(&[0, 5]), 10));
        // Both: that many of those indexes.
        let p = pol(vec![(Some("0,2-4,7"), Some(2))]);
        assert!(success_policy_met(&p, &set(&[1, 3, 7]), 10));
        assert!(!success_policy_met(&p, &set(&[1, 3, 5]), 10));
        // Any rule.
        let p = pol(vec![(Some("9"), None), (None, Some(5))]);
        assert!(success_policy_met(&p, &set(&[9]), 10));
        assert!(!success_policy_met(&p, &set(&[1, 2]), 10));
    }
}
