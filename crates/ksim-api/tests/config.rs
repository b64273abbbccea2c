//! KubeSchedulerConfiguration read as kube-scheduler reads it: strict decoding, upstream's
//! validation (validation.go, validation_pluginargs.go) with its field paths and messages, and
//! the ConfigMap hint. Each rule has a case with the exact error text.

use ksim_api::config::KubeSchedulerConfiguration;
use serde_json::Value;

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("test YAML")
}

fn err(text: &str) -> String {
    match KubeSchedulerConfiguration::from_value(&yaml(text)) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn ok(text: &str) -> KubeSchedulerConfiguration {
    match KubeSchedulerConfiguration::from_value(&yaml(text)) {
        Ok(c) => c,
        Err(e) => panic!("refused: {e}\n{text}"),
    }
}

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

/// A one-profile configuration with one pluginConfig entry.
fn args(plugin: &str, args: &str) -> String {
    format!("{HEAD}profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: {plugin}\n    args: {args}\n")
}

// ---- strict decoding ----------------------------------------------------------------------

#[test]
fn unknown_fields_are_refused_with_their_path() {
    assert_eq!(
        err(&format!(
            "{HEAD}profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeAffinity\n    args: {{}}\n  - name: NodeResourcesFit\n    args:\n      scoringStratgy: {{type: MostAllocated}}\n"
        )),
        "profiles[0].pluginConfig[1].args.scoringStratgy: unknown field (did you mean \"scoringStrategy\"?)"
    );
    assert_eq!(
        err(&format!("{HEAD}profile:\n- schedulerName: s\n")),
        "profile: unknown field (did you mean \"profiles\"?)"
    );
    assert_eq!(
        err(&format!("{HEAD}profiles:\n- schedulerName: s\n  plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        wieght: 3\n")),
        "profiles[0].plugins.score.enabled[0].wieght: unknown field (did you mean \"weight\"?)"
    );
    assert_eq!(
        err(&format!(
            "{HEAD}profiles:\n- schedulerName: s\n  plugins:\n    scores: {{}}\n"
        )),
        "profiles[0].plugins.scores: unknown field (did you mean \"score\"?)"
    );
    assert_eq!(
        err(&format!("{HEAD}metadata: {{name: x}}\n")),
        "metadata: unknown field"
    );
    // Field names are case-sensitive, as in the strict decoder.
    assert_eq!(
        err(&format!("{HEAD}Parallelism: 4\n")),
        "Parallelism: unknown field (did you mean \"parallelism\"?)"
    );
    // Several at once, upstream's aggregate form.
    assert_eq!(
        err(&format!("{HEAD}foo: 1\nbar: 2\n")),
        "[foo: unknown field, bar: unknown field]"
    );
}

#[test]
fn unknown_fields_inside_every_in_tree_args_type() {
    let cases = [
        ("NodeResourcesFit", "{scoringStrategy: {type: MostAllocated, resource: []}}", "scoringStrategy.resource: unknown field (did you mean \"resources\"?)"),
        ("NodeResourcesFit", "{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilisation: 0, score: 0}]}}}", "scoringStrategy.requestedToCapacityRatio.shape[0].utilisation: unknown field (did you mean \"utilization\"?)"),
        ("NodeResourcesBalancedAllocation", "{resources: [{name: cpu, wieght: 1}]}", "resources[0].wieght: unknown field (did you mean \"weight\"?)"),
        ("InterPodAffinity", "{hardPodAffinityWieght: 5}", "hardPodAffinityWieght: unknown field (did you mean \"hardPodAffinityWeight\"?)"),
        ("PodTopologySpread", "{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeAffinityPolicyy: Honor}]}", "defaultConstraints[0].nodeAffinityPolicyy: unknown field (did you mean \"nodeAffinityPolicy\"?)"),
        ("NodeAffinity", "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpression: []}]}}}", "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpression: unknown field (did you mean \"matchExpressions\"?)"),
        ("DefaultPreemption", "{minCandidateNodesPercent: 5}", "minCandidateNodesPercent: unknown field"),
        ("VolumeBinding", "{bindTimeout: 5}", "bindTimeout: unknown field"),
        ("DynamicResources", "{filterTimout: 5s}", "filterTimout: unknown field (did you mean \"filterTimeout\"?)"),
    ];
    for (plugin, a, want) in cases {
        assert_eq!(
            err(&args(plugin, a)),
            format!("profiles[0].pluginConfig[0].args.{want}"),
            "{plugin}"
        );
    }
}

#[test]
fn fields_upstream_knows_are_accepted() {
    let c = ok(&format!(
        "{HEAD}parallelism: 16\nleaderElection:\n  leaderElect: false\n  resourceLock: leases\nclientConnection:\n  kubeconfig: /etc/kubernetes/scheduler.conf\n  qps: 50\n  burst: 100\nenableProfiling: true\nenableContentionProfiling: true\ndelayCacheUntilActive: false\npercentageOfNodesToScore: 0\npodInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 10\nprofiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: NodeResourcesFitArgs\n      ignoredResources: [example.com/foo]\n      scoringStrategy: {{type: MostAllocated}}\n  - name: VolumeBinding\n    args: {{bindTimeoutSeconds: 30}}\n  - name: DynamicResources\n    args: {{filterTimeout: 10s}}\n  - name: MyOutOfTreePlugin\n    args: {{anything: [1, 2], goes: here}}\n  - name: TaintToleration\n    args: {{notDecoded: true}}\n"
    ));
    assert_eq!(c.profiles[0].plugin_config.len(), 5);
    // apiVersion and kind may be absent (an inline configuration in a scenario).
    ok("profiles: [{schedulerName: x}]\n");
}

#[test]
fn a_configmap_is_refused_with_the_command_that_extracts_it() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: scheduler-config\n  namespace: kube-system\ndata:\n  scheduler-config.yaml: |\n    apiVersion: kubescheduler.config.k8s.io/v1\n    kind: KubeSchedulerConfiguration\n    profiles:\n    - schedulerName: default-scheduler\n";
    assert_eq!(
        err(cm),
        "kind: this is a ConfigMap, not a KubeSchedulerConfiguration; its data key \"scheduler-config.yaml\" holds the configuration. Extract it with: kubectl get cm scheduler-config -o jsonpath='{.data.scheduler-config\\.yaml}' > scheduler-config.yaml"
    );
}

#[test]
fn explicit_nulls_read_as_absent() {
    let c = ok(&format!(
        "{HEAD}profiles:\n- schedulerName: default-scheduler\n  plugins: null\n  pluginConfig:\n  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: null\n  - name: NodeResourcesFit\n    args:\n      ignoredResources: null\n      scoringStrategy:\n        type: MostAllocated\n        resources: null\n"
    ));
    let dp: ksim_api::config::DefaultPreemptionArgs = ksim_api::config::decode_args(
        "DefaultPreemption",
        c.profiles[0].args_of("DefaultPreemption"),
    )
    .unwrap();
    assert_eq!(
        dp.min_candidate_nodes_percentage, 10,
        "null = absent = default"
    );
    let fit: ksim_api::config::NodeResourcesFitArgs = ksim_api::config::decode_args(
        "NodeResourcesFit",
        c.profiles[0].args_of("NodeResourcesFit"),
    )
    .unwrap();
    assert_eq!(fit.defaulted().scoring_strategy.resources.len(), 2);
    ok(&format!("{HEAD}profiles: null\n"));
}

#[test]
fn type_errors_name_their_path() {
    assert_eq!(
        err(&format!("{HEAD}parallelism: lots\n")),
        "parallelism: invalid type: string \"lots\", expected i32"
    );
    assert_eq!(
        err(&args("InterPodAffinity", "{hardPodAffinityWeight: heavy}")),
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: invalid type: string \"heavy\", expected i32"
    );
}

// ---- top-level and profile validation (validation.go) ---------------------------------------

#[test]
fn top_level_rules() {
    assert_eq!(
        err(&format!("{HEAD}parallelism: 0\n")),
        "parallelism: Invalid value: 0: should be an integer value greater than zero"
    );
    assert_eq!(
        err(&format!("{HEAD}percentageOfNodesToScore: 101\n")),
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"
    );
    assert_eq!(
        err(&format!("{HEAD}podInitialBackoffSeconds: 0\n")),
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"
    );
    assert_eq!(
        err(&format!("{HEAD}podInitialBackoffSeconds: 20\npodMaxBackoffSeconds: 10\n")),
        "podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to PodInitialBackoffSeconds"
    );
    assert_eq!(
        err("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"),
        "apiVersion: Unsupported value: \"kubescheduler.config.k8s.io/v1beta3\": supported values: \"kubescheduler.config.k8s.io/v1\" \
         (v1beta3 is no longer served: kube-scheduler v1.35 reads only kubescheduler.config.k8s.io/v1; \
         convert the file to v1 first, see https://kubernetes.io/docs/reference/scheduling/config/)"
    );
    // The version is checked before any field: a v1beta1 file's old fields are not reported.
    let e = err("apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\nalgorithmSource: {provider: DefaultProvider}\n");
    assert!(
        e.starts_with("apiVersion: Unsupported value: \"kubescheduler.config.k8s.io/v1beta1\""),
        "{e}"
    );
    assert!(!e.contains("unknown field"), "{e}");
    assert_eq!(
        err("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Node\nfoo: 1\n"),
        "kind: Unsupported value: \"Node\": supported values: \"KubeSchedulerConfiguration\""
    );
}

#[test]
fn extender_rules() {
    let c = ok(&format!(
        "{HEAD}extenders:\n- urlPrefix: http://127.0.0.1:8888\n  filterVerb: filter\n  prioritizeVerb: prio\n  weight: 2\n  httpTimeout: 200ms\n  managedResources:\n  - name: example.com/foo\n    ignoredByScheduler: true\n  ignorable: true\n"
    ));
    assert_eq!(c.extenders.len(), 1);
    assert_eq!(
        c.extenders[0].timeout(),
        std::time::Duration::from_millis(200)
    );
    assert!(c.extenders[0].ignorable);
    let e = |body: &str| err(&format!("{HEAD}extenders:\n{body}"));
    assert_eq!(
        e("- urlPrefix: http://h\n  prioritizeVerb: p\n"),
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"
    );
    assert_eq!(
        e("- urlPrefix: http://h\n  weght: 1\n"),
        "extenders[0].weght: unknown field (did you mean \"weight\"?)"
    );
    assert_eq!(e("- urlPrefix: http://h\n  httpTimeout: 5 seconds\n"), "extenders[0].httpTimeout: Invalid value: \"5 seconds\": not a duration (e.g. \"5s\", \"200ms\")");
    assert_eq!(e("- urlPrefix: ftp://h\n"), "extenders[0].urlPrefix: Invalid value: \"ftp://h\": ksim reaches extenders over http:// or https:// only");
    // tlsConfig as upstream's: the *Data fields are base64 ([]byte in Go).
    let c = ok(&format!("{HEAD}extenders:\n- urlPrefix: https://h\n  enableHTTPS: true\n  tlsConfig:\n    serverName: ext\n    caData: aGVsbG8=\n    certFile: /c.pem\n"));
    let tls = c.extenders[0].tls_config.as_ref().unwrap();
    assert_eq!(
        (
            tls.server_name.as_str(),
            tls.ca_data.as_slice(),
            tls.cert_file.as_str()
        ),
        ("ext", &b"hello"[..], "/c.pem")
    );
    assert!(
        e("- urlPrefix: https://h\n  tlsConfig:\n    caData: \"not base64!\"\n")
            .contains("illegal base64 data")
    );
    assert_eq!(
        e("- urlPrefix: https://h\n  tlsConfig:\n    caDta: x\n"),
        "extenders[0].tlsConfig.caDta: unknown field (did you mean \"caData\"?)"
    );
    assert_eq!(
        e("- filterVerb: f\n"),
        "extenders[0].urlPrefix: Required value"
    );
    // upstream's validateExtenders: a single binder.
    ok(&format!("{HEAD}extenders:\n- urlPrefix: http://a\n  bindVerb: bind\n  preemptVerb: preempt\n- urlPrefix: http://b\n  preemptVerb: preempt\n"));
    assert_eq!(e("- urlPrefix: http://a\n  bindVerb: bind\n- urlPrefix: http://b\n  bindVerb: bind\n"), "extenders: Invalid value: \"found 2 extenders implementing bind\": only one extender can implement bind");
    assert_eq!(e("- urlPrefix: http://h\n  managedResources:\n  - name: cpu\n  - name: a.com/x\n  - name: a.com/x\n"), "[extenders[0].managedResources[0].name: Invalid value: \"cpu\": is an invalid extended resource name, extenders[0].managedResources[2].name: Invalid value: \"a.com/x\": duplicate extender managed resource name]");
}

#[test]
fn profile_rules() {
    assert_eq!(
        err(&format!(
            "{HEAD}profiles:\n- schedulerName: a\n- schedulerName: a\n"
        )),
        "profiles[1].schedulerName: Duplicate value: \"a\""
    );
    assert_eq!(
        err(&format!(
            "{HEAD}profiles:\n- schedulerName: a\n- percentageOfNodesToScore: 5\n"
        )),
        "profiles[1].schedulerName: Required value"
    );
    // One profile's name defaults to default-scheduler.
    assert_eq!(
        ok(&format!("{HEAD}profiles:\n- percentageOfNodesToScore: 5\n")).profiles[0].name(),
        "default-scheduler"
    );
    assert_eq!(
        err(&format!(
            "{HEAD}profiles:\n- schedulerName: a\n  percentageOfNodesToScore: -1\n"
        )),
        "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"
    );
    assert_eq!(
        err(&format!("{HEAD}profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: NodeAffinity\n  - name: NodeAffinity\n")),
        "profiles[0].pluginConfig[1]: Duplicate value: \"NodeAffinity\""
    );
    assert_eq!(
        err(&format!("{HEAD}profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled: [{{name: EBSLimits}}]\n")),
        "profiles[0].plugins.filter.enabled[0]: Invalid value: \"EBSLimits\": was invalid in version \"kubescheduler.config.k8s.io/v1\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1\")"
    );
    assert_eq!(
        err(&format!("{HEAD}profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled: [{{name: MySort}}]\n")),
        "profiles[1].plugins.queueSort: Invalid value: {\"enabled\":[{\"name\":\"MySort\"}]}: must be the same for all profiles"
    );
    // The same queue sort everywhere, written out or not, is fine.
    ok(&format!("{HEAD}profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled: [{{name: PrioritySort}}]\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled: [{{name: PrioritySort}}]\n"));
    ok(&format!("{HEAD}profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort: {{}}\n"));
    // Score plugin weights: upstream reads 0 as 1 and checks nothing else below MaxTotalScore.
    ok(&format!("{HEAD}profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled: [{{name: ImageLocality, weight: 0}}, {{name: TaintToleration, weight: 100}}]\n"));
}

// ---- plugin args (validation_pluginargs.go) -----------------------------------------------

fn args_err(plugin: &str, a: &str) -> String {
    err(&args(plugin, a)).replace("profiles[0].pluginConfig[0].args.", "")
}

#[test]
fn node_resources_fit_args() {
    assert_eq!(
        args_err("NodeResourcesFit", "{scoringStrategy: {type: Packed}}"),
        "scoringStrategy.type: Unsupported value: \"Packed\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
    );
    // A strategy without a type is not defaulted upstream.
    assert_eq!(
        args_err("NodeResourcesFit", "{scoringStrategy: {resources: [{name: cpu, weight: 1}]}}"),
        "scoringStrategy.type: Unsupported value: \"\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
    );
    assert_eq!(
        args_err("NodeResourcesFit", "{scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 101}]}}"),
        "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"
    );
    assert_eq!(
        args_err("NodeResourcesFit", "{scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: -1}]}}"),
        "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of cpu not in valid range (0, 100]"
    );
    // Weight 0 is defaulted to 1.
    ok(&args(
        "NodeResourcesFit",
        "{scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 0}]}}",
    ));
    assert_eq!(
        args_err("NodeResourcesFit", "{ignoredResourceGroups: [example.com/gpu]}"),
        "ignoredResourceGroups[0]: Invalid value: \"example.com/gpu\": resource group name can't contain '/'"
    );
    assert_eq!(
        args_err("NodeResourcesFit", "{ignoredResources: [\"-bad\"]}"),
        "ignoredResources[0]: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
}

#[test]
fn requested_to_capacity_ratio_shape() {
    let rtcr = |shape: &str| {
        args_err(
            "NodeResourcesFit",
            &format!("{{scoringStrategy: {{type: RequestedToCapacityRatio, requestedToCapacityRatio: {{shape: {shape}}}}}}}"),
        )
    };
    let p = "scoringStrategy.requestedToCapacityRatio.shape";
    assert_eq!(
        rtcr("[]"),
        format!("{p}: Required value: at least one point must be specified")
    );
    assert_eq!(
        rtcr("[{utilization: 50, score: 1}, {utilization: 50, score: 2}]"),
        format!("{p}[1].utilization: Invalid value: 50: values must be sorted in increasing order")
    );
    assert_eq!(
        rtcr("[{utilization: 0, score: 0}, {utilization: 101, score: 10}]"),
        format!("{p}[1].utilization: Invalid value: 101: not in valid range [0, 100]")
    );
    assert_eq!(
        rtcr("[{utilization: 0, score: 11}]"),
        format!("{p}[0].score: Invalid value: 11: not in valid range [0, 10]")
    );
    ok(&args("NodeResourcesFit", "{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}}}"));
}

#[test]
fn balanced_allocation_args() {
    assert_eq!(
        args_err(
            "NodeResourcesBalancedAllocation",
            "{resources: [{name: cpu, weight: 2}]}"
        ),
        "resources[0].weight: Invalid value: 2: must be 1"
    );
    assert_eq!(
        args_err(
            "NodeResourcesBalancedAllocation",
            "{resources: [{name: cpu}, {name: cpu}]}"
        ),
        "resources[1].name: Duplicate value: \"cpu\""
    );
    ok(&args(
        "NodeResourcesBalancedAllocation",
        "{resources: [{name: cpu, weight: 0}, {name: example.com/gpu, weight: 1}]}",
    ));
}

#[test]
fn inter_pod_affinity_args() {
    assert_eq!(
        args_err("InterPodAffinity", "{hardPodAffinityWeight: 101}"),
        "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
    );
    ok(&args("InterPodAffinity", "{hardPodAffinityWeight: 0}"));
}

#[test]
fn default_preemption_args() {
    assert_eq!(
        args_err("DefaultPreemption", "{minCandidateNodesPercentage: 101}"),
        "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"
    );
    assert_eq!(
        args_err("DefaultPreemption", "{minCandidateNodesAbsolute: -1}"),
        "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"
    );
    assert_eq!(
        err(&args("DefaultPreemption", "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}")),
        "[profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute, profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage]"
    );
    ok(&args(
        "DefaultPreemption",
        "{minCandidateNodesPercentage: 0}",
    ));
}

#[test]
fn pod_topology_spread_args() {
    assert_eq!(
        args_err("PodTopologySpread", "{defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}"),
        "defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty"
    );
    assert_eq!(
        args_err("PodTopologySpread", "{defaultingType: Custom}"),
        "defaultingType: Unsupported value: \"Custom\": supported values: \"System\", \"List\""
    );
    assert_eq!(
        args_err("PodTopologySpread", "{defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}"),
        "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"
    );
    assert_eq!(
        args_err("PodTopologySpread", "{defaultingType: List, defaultConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]}"),
        "defaultConstraints[0].topologyKey: Required value: can not be empty"
    );
    assert_eq!(
        args_err("PodTopologySpread", "{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Never}]}"),
        "defaultConstraints[0].whenUnsatisfiable: Unsupported value: \"Never\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
    );
    assert_eq!(
        args_err("PodTopologySpread", "{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}]}"),
        "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
    );
    assert_eq!(
        args_err("PodTopologySpread", "{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}"),
        "defaultConstraints[1]: Duplicate value: \"{zone, DoNotSchedule}\""
    );
    ok(&args(
        "PodTopologySpread",
        "{defaultingType: List, defaultConstraints: []}",
    ));
    ok(&args("PodTopologySpread", "{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}"));
}

#[test]
fn volume_binding_args() {
    assert_eq!(
        args_err("VolumeBinding", "{bindTimeoutSeconds: -1}"),
        "bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value"
    );
    assert_eq!(
        args_err("VolumeBinding", "{shape: [{utilization: 0, score: 10}]}"),
        "shape: Invalid value: [{\"utilization\":0,\"score\":10}]: unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
    );
    ok(&args("VolumeBinding", "{bindTimeoutSeconds: 0}"));
}

#[test]
fn node_affinity_args() {
    let req = |expr: &str| {
        args_err(
            "NodeAffinity",
            &format!("{{addedAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{{matchExpressions: [{expr}]}}]}}}}}}"),
        )
    };
    let p = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]";
    assert_eq!(
        req("{key: zone, operator: Equals, values: [a]}"),
        format!("{p}.operator: Unsupported value: \"Equals\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"")
    );
    assert_eq!(
        req("{key: zone, operator: In}"),
        format!(
            "{p}.values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        )
    );
    assert_eq!(
        req("{key: zone, operator: Exists, values: [a]}"),
        format!("{p}.values: Invalid value: [\"a\"]: values set must be empty for exists and does not exist")
    );
    assert_eq!(
        req("{key: cores, operator: Gt, values: [many]}"),
        format!("{p}.values[0]: Invalid value: \"many\": for 'Gt', 'Lt' operators, the value must be an integer")
    );
    let pref = args_err(
        "NodeAffinity",
        "{addedAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchFields: [{key: metadata.name, operator: In, values: [a, b]}]}}]}}",
    );
    assert_eq!(
        pref,
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: Invalid value: [\"a\",\"b\"]: must have one element"
    );
    ok(&args("NodeAffinity", "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}"));
}

#[test]
fn args_of_another_kind_are_refused() {
    assert_eq!(
        args_err("NodeResourcesFit", "{kind: InterPodAffinityArgs}"),
        "kind: Invalid value: \"InterPodAffinityArgs\": args for plugin NodeResourcesFit must be of kind NodeResourcesFitArgs"
    );
}

#[test]
fn validate_on_a_typed_configuration_gives_the_same_text() {
    let mut cfg = KubeSchedulerConfiguration {
        parallelism: Some(-2),
        ..Default::default()
    };
    assert_eq!(
        cfg.validate().unwrap_err(),
        "parallelism: Invalid value: -2: should be an integer value greater than zero"
    );
    cfg.parallelism = None;
    assert!(cfg.validate().is_ok());
}
