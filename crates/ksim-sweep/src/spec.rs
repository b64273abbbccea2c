//! Sweep files: a base scenario and the axes to vary; their cross product is the list of runs.
//!
//! ```yaml
//! name: quickstart-sweep          # optional; default: the file's stem
//! scenario: quickstart.yaml       # the base scenario, relative to this file
//! output: ../results/quickstart-sweep   # optional; default results/<name> (relative to cwd)
//! axes:                           # cross product, the first axis varying slowest
//!   - scheduler:                  # whole KubeSchedulerConfigurations
//!       - {label: default}                      # the scenario's own configuration
//!       - {label: packed, configFile: most-allocated.yaml}
//!       - {label: inline, config: {profiles: [...]}}
//!   - scoringStrategy: [LeastAllocated, MostAllocated]   # NodeResourcesFit scoringStrategy.type
//!   - pluginWeight: {plugin: NodeResourcesBalancedAllocation, weights: [1, 5]}
//!   - pluginWeight: {plugin: PodTopologySpread, weights: [0, 2]}   # 0 = scoring disabled
//!   - poolCount: {pool: general, counts: [200, 240, 280]}
//!   - poolShape: {pool: general, shapes: [{label: 16cpu, template: {...}}, ...]}
//!   - workloadScale: [0.8, 1.0, 1.2]
//!   - controllerScale: [1.0, 1.5, 2.0]
//!   - seed: [1, 2, 3]
//! columns: ["within(30s)", p95]   # optional: SLO figures as extra sweep.csv columns
//! ```
//!
//! Each axis is one column of `sweep.csv`, named `scheduler`, `scoring_strategy`,
//! `weight.<plugin>`, `count.<pool>`, `shape.<pool>`, `scale`, `controller_scale` and `seed`; a
//! column may appear
//! once. A run applies its point to a copy of the parsed base scenario before planning it, so
//! every run is an ordinary scenario run:
//!
//! - `scheduler` replaces the scenario's configuration; `scoringStrategy` and `pluginWeight` then
//!   edit every profile of it (a scoring strategy given as a string sets `type`; as a mapping it
//!   replaces the whole `scoringStrategy`). A weight sets the plugin's MultiPoint weight; weight 0
//!   disables the plugin at Score (kube-scheduler reads 0 as "default weight", which is never
//!   what a sweep means).
//! - `poolCount` and `poolShape` set a pool's `count` and `template` (the pool must exist).
//! - `workloadScale` multiplies the load: see [`crate::scale`]; it multiplies the workload
//!   controllers' replicas too (as `controllerScale` does).
//! - `controllerScale` multiplies the replicas of the workload controllers only (Deployments,
//!   ReplicaSets, StatefulSets: `replicas`; Jobs: `parallelism` and `completions`; rounded up),
//!   on top of the scenario's own `workload.controllerScale` (see
//!   `ksim_engine::config::ControllerScale`).
//! - `seed` replaces the scenario seed.

use std::path::{Path, PathBuf};

use ksim_api::config::{KubeSchedulerConfiguration, PluginRef, PluginSet, Plugins, Profile};
use ksim_trace::nodes::parse_documents;
use ksim_trace::scenario::load_scheduler_config;
use ksim_trace::{parse_scenario, Scenario};
use serde::Deserialize;
use serde_json::Value;

use crate::error::SweepError;

/// A sweep file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SweepFile {
    #[serde(default)]
    pub name: Option<String>,
    pub scenario: String,
    #[serde(default)]
    pub output: Option<String>,
    pub axes: Vec<AxisSpec>,
    /// SLO figures added as `sweep.csv` columns (`within(30s)`, `p95`, `scheduled`, ...).
    #[serde(default)]
    pub columns: Vec<String>,
}

/// One axis as written (a one-key mapping).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum AxisSpec {
    Scheduler(Vec<SchedulerChoice>),
    ScoringStrategy(Vec<Value>),
    PluginWeight {
        plugin: String,
        weights: Vec<i32>,
    },
    PoolCount {
        pool: String,
        counts: Vec<u32>,
    },
    PoolShape {
        pool: String,
        shapes: Vec<ShapeChoice>,
    },
    WorkloadScale(Vec<f64>),
    ControllerScale(Vec<f64>),
    Seed(Vec<u64>),
    /// The Kubernetes version each run behaves as (`["1.35", "1.36"]`).
    KubernetesVersion(Vec<ksim_api::version::KubernetesVersion>),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulerChoice {
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub config_file: Option<String>,
    #[serde(default)]
    pub config: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShapeChoice {
    pub label: String,
    pub template: Value,
}

/// What one value of an axis does to a run.
#[derive(Debug, Clone)]
pub enum Setting {
    /// `None`: keep the scenario's configuration.
    Scheduler(Option<Box<KubeSchedulerConfiguration>>),
    ScoringStrategy(Value),
    PluginWeight(String, i32),
    PoolCount(usize, u32),
    PoolShape(usize, Value),
    Scale(f64),
    ControllerScale(f64),
    Seed(u64),
    KubernetesVersion(ksim_api::version::KubernetesVersion),
}

/// One value of an axis: its label in `sweep.csv` and what it does.
#[derive(Debug, Clone)]
pub struct AxisValue {
    pub label: String,
    /// The value as a number, when it is one (counts, weights, scales, seeds): plots then use
    /// a numeric x axis.
    pub number: Option<f64>,
    pub setting: Setting,
}

/// A validated axis.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The `sweep.csv` column.
    pub name: String,
    pub values: Vec<AxisValue>,
}

/// A parsed and validated sweep: the base scenario and its axes.
#[derive(Debug, Clone)]
pub struct Sweep {
    pub name: String,
    /// The sweep file as the user named it.
    pub source: String,
    pub base: Scenario,
    /// The base scenario's file name (for errors) and folder (relative paths resolve there).
    pub base_source: String,
    pub base_dir: PathBuf,
    pub output: Option<PathBuf>,
    pub axes: Vec<Axis>,
    /// SLO figures shown as extra `sweep.csv` columns, as written (checked when parsed).
    pub columns: Vec<String>,
}

/// One run of a sweep: its index in the cross product and the value index on each axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPoint {
    pub index: usize,
    pub id: String,
    pub choice: Vec<usize>,
}

/// Reads and validates a sweep file.
pub fn load_sweep(path: &Path) -> Result<Sweep, SweepError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SweepError::io(path, e))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let stem = path
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let stem = stem
        .trim_end_matches(".yaml")
        .trim_end_matches(".yml")
        .trim_end_matches(".json")
        .to_string();
    parse_sweep(&name, &text, base, &stem)
}

/// Parses sweep text; `base` is the folder relative paths resolve against, `stem` the default
/// name.
pub fn parse_sweep(source: &str, text: &str, base: &Path, stem: &str) -> Result<Sweep, SweepError> {
    let docs = parse_documents(source, text)?;
    let [doc] = <[Value; 1]>::try_from(docs).map_err(|d| {
        SweepError::input(
            source,
            format!("expected exactly one YAML document, found {}", d.len()),
        )
    })?;
    ksim_api::json::expect_mapping(&doc, "a sweep").map_err(|m| SweepError::input(source, m))?;
    let file: SweepFile = serde_path_to_error::deserialize(&doc).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            source.to_string()
        } else {
            format!("{source}: {path}")
        };
        SweepError::input(at, e.inner().to_string())
    })?;
    let resolve = |p: &str| -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let scenario_path = resolve(&file.scenario);
    let scenario_text = std::fs::read_to_string(&scenario_path).map_err(|e| {
        SweepError::input(
            format!("{source}: scenario"),
            format!("{}: {e}", scenario_path.display()),
        )
    })?;
    let base_source = scenario_path.display().to_string();
    let scenario = parse_scenario(&base_source, &scenario_text)?;
    let base_dir = scenario_path
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let name = match &file.name {
        Some(n) if n.trim().is_empty() => {
            return Err(SweepError::input(format!("{source}: name"), "is empty"))
        }
        Some(n) => n.clone(),
        None => stem.to_string(),
    };
    if file.axes.is_empty() {
        return Err(SweepError::input(
            format!("{source}: axes"),
            "a sweep needs at least one axis",
        ));
    }
    let mut axes: Vec<Axis> = Vec::new();
    for (i, a) in file.axes.iter().enumerate() {
        let at = format!("{source}: axes[{i}]");
        let axis = build_axis(a, &at, &scenario, &resolve)?;
        if axis.values.is_empty() {
            return Err(SweepError::input(at, "an axis needs at least one value"));
        }
        if axes.iter().any(|x| x.name == axis.name) {
            return Err(SweepError::input(
                at,
                format!("the column {:?} is already an axis", axis.name),
            ));
        }
        let mut labels = std::collections::BTreeSet::new();
        for v in &axis.values {
            if !labels.insert(v.label.clone()) {
                return Err(SweepError::input(
                    at,
                    format!("the value {:?} appears twice", v.label),
                ));
            }
        }
        axes.push(axis);
    }
    crate::table::parse_columns(&file.columns, &format!("{source}: columns"))?;
    Ok(Sweep {
        name,
        source: source.to_string(),
        base: scenario,
        base_source,
        base_dir,
        output: file.output.as_deref().map(resolve),
        axes,
        columns: file.columns.iter().map(|c| c.trim().to_string()).collect(),
    })
}

fn pool_index(scenario: &Scenario, pool: &str, at: &str) -> Result<usize, SweepError> {
    scenario
        .cluster
        .pools
        .iter()
        .position(|p| p.name == pool)
        .ok_or_else(|| {
            let names: Vec<&str> = scenario
                .cluster
                .pools
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            SweepError::input(
                format!("{at}.pool"),
                format!("the scenario has no pool {pool:?} (its pools: {names:?})"),
            )
        })
}

fn fmt_num(x: f64) -> String {
    format!("{x}")
}

fn build_axis(
    a: &AxisSpec,
    at: &str,
    scenario: &Scenario,
    resolve: &dyn Fn(&str) -> PathBuf,
) -> Result<Axis, SweepError> {
    Ok(match a {
        AxisSpec::Scheduler(choices) => {
            let mut values = Vec::new();
            for (j, c) in choices.iter().enumerate() {
                let at = format!("{at}.scheduler[{j}]");
                let (label, cfg) = match (&c.config_file, &c.config) {
                    (Some(_), Some(_)) => {
                        return Err(SweepError::input(at, "give configFile or config, not both"))
                    }
                    (Some(f), None) => {
                        let cfg = load_scheduler_config(&resolve(f))?;
                        let stem = Path::new(f)
                            .file_stem()
                            .map(|s| s.to_string_lossy().to_string())
                            .unwrap_or_else(|| f.clone());
                        (c.label.clone().unwrap_or(stem), Some(Box::new(cfg)))
                    }
                    (None, Some(v)) => {
                        let cfg = KubeSchedulerConfiguration::from_value(v).map_err(|e| {
                            SweepError::input(at.clone(), e.prefixed("config").to_string())
                        })?;
                        (
                            c.label.clone().unwrap_or_else(|| format!("config{j}")),
                            Some(Box::new(cfg)),
                        )
                    }
                    (None, None) => (c.label.clone().unwrap_or_else(|| "scenario".into()), None),
                };
                values.push(AxisValue {
                    label,
                    number: None,
                    setting: Setting::Scheduler(cfg),
                });
            }
            Axis {
                name: "scheduler".into(),
                values,
            }
        }
        AxisSpec::ScoringStrategy(vs) => {
            let mut values = Vec::new();
            for (j, v) in vs.iter().enumerate() {
                let at = format!("{at}.scoringStrategy[{j}]");
                let (label, value) = match v {
                    Value::String(s) => (s.clone(), serde_json::json!({"type": s})),
                    Value::Object(m) => {
                        let label = m
                            .get("type")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                            .ok_or_else(|| {
                                SweepError::input(&at, "a scoring strategy mapping needs a type")
                            })?;
                        (label, v.clone())
                    }
                    _ => {
                        return Err(SweepError::input(
                            at,
                            "expected a strategy name (LeastAllocated, MostAllocated, RequestedToCapacityRatio) or a scoringStrategy mapping",
                        ))
                    }
                };
                if !matches!(
                    label.as_str(),
                    "LeastAllocated" | "MostAllocated" | "RequestedToCapacityRatio"
                ) {
                    return Err(SweepError::input(
                        at,
                        format!("unknown scoring strategy {label:?} (LeastAllocated, MostAllocated or RequestedToCapacityRatio)"),
                    ));
                }
                values.push(AxisValue {
                    label,
                    number: None,
                    setting: Setting::ScoringStrategy(value),
                });
            }
            Axis {
                name: "scoring_strategy".into(),
                values,
            }
        }
        AxisSpec::PluginWeight { plugin, weights } => {
            let known = ksim_scheduler::framework::Registry::in_tree();
            if known.get(plugin).is_none() {
                return Err(SweepError::input(
                    format!("{at}.pluginWeight.plugin"),
                    format!("{plugin:?} is not an in-tree plugin"),
                ));
            }
            let mut values = Vec::new();
            for (j, w) in weights.iter().enumerate() {
                if *w < 0 || *w > 100 {
                    return Err(SweepError::input(
                        format!("{at}.pluginWeight.weights[{j}]"),
                        format!("weight {w} is not in 0..100"),
                    ));
                }
                values.push(AxisValue {
                    label: w.to_string(),
                    number: Some(f64::from(*w)),
                    setting: Setting::PluginWeight(plugin.clone(), *w),
                });
            }
            Axis {
                name: format!("weight.{plugin}"),
                values,
            }
        }
        AxisSpec::PoolCount { pool, counts } => {
            let at = format!("{at}.poolCount");
            let idx = pool_index(scenario, pool, &at)?;
            Axis {
                name: format!("count.{pool}"),
                values: counts
                    .iter()
                    .map(|c| AxisValue {
                        label: c.to_string(),
                        number: Some(f64::from(*c)),
                        setting: Setting::PoolCount(idx, *c),
                    })
                    .collect(),
            }
        }
        AxisSpec::PoolShape { pool, shapes } => {
            let at = format!("{at}.poolShape");
            let idx = pool_index(scenario, pool, &at)?;
            let mut values = Vec::new();
            for (j, s) in shapes.iter().enumerate() {
                // Decode once now so a bad template fails before any run starts.
                let probe = ksim_trace::scenario::NodePool {
                    name: pool.clone(),
                    count: 1,
                    template: s.template.clone(),
                };
                ksim_trace::scenario::pool_nodes(&probe, &format!("{at}.shapes[{j}]"))
                    .map_err(|(f, m)| SweepError::input(f, m))?;
                if s.label.is_empty() {
                    return Err(SweepError::input(
                        format!("{at}.shapes[{j}].label"),
                        "is empty",
                    ));
                }
                values.push(AxisValue {
                    label: s.label.clone(),
                    number: None,
                    setting: Setting::PoolShape(idx, s.template.clone()),
                });
            }
            Axis {
                name: format!("shape.{pool}"),
                values,
            }
        }
        AxisSpec::WorkloadScale(fs) => {
            let mut values = Vec::new();
            for (j, f) in fs.iter().enumerate() {
                if !(f.is_finite() && *f > 0.0 && *f <= 1000.0) {
                    return Err(SweepError::input(
                        format!("{at}.workloadScale[{j}]"),
                        format!("scale factor {f} is not in (0, 1000]"),
                    ));
                }
                values.push(AxisValue {
                    label: fmt_num(*f),
                    number: Some(*f),
                    setting: Setting::Scale(*f),
                });
            }
            Axis {
                name: "scale".into(),
                values,
            }
        }
        AxisSpec::ControllerScale(fs) => {
            let mut values = Vec::new();
            for (j, f) in fs.iter().enumerate() {
                ksim_engine::config::check_scale(*f)
                    .map_err(|m| SweepError::input(format!("{at}.controllerScale[{j}]"), m))?;
                values.push(AxisValue {
                    label: fmt_num(*f),
                    number: Some(*f),
                    setting: Setting::ControllerScale(*f),
                });
            }
            Axis {
                name: "controller_scale".into(),
                values,
            }
        }
        AxisSpec::Seed(seeds) => Axis {
            name: "seed".into(),
            values: seeds
                .iter()
                .map(|s| AxisValue {
                    label: s.to_string(),
                    // Seeds are labels, not magnitudes: plot them as categories.
                    number: None,
                    setting: Setting::Seed(*s),
                })
                .collect(),
        },
        AxisSpec::KubernetesVersion(versions) => Axis {
            name: "kubernetes_version".into(),
            values: versions
                .iter()
                .map(|v| AxisValue {
                    label: v.to_string(),
                    // Versions are categories.
                    number: None,
                    setting: Setting::KubernetesVersion(*v),
                })
                .collect(),
        },
    })
}

/// Keeps ids filesystem-safe and short.
fn sanitize(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '=') {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.truncate(40);
    out
}

impl Sweep {
    /// How many runs the cross product has.
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every run, in cross-product order (first axis slowest).
    pub fn points(&self) -> Vec<RunPoint> {
        let n = self.len();
        let width = n.saturating_sub(1).to_string().len().max(3);
        (0..n)
            .map(|index| {
                let mut rest = index;
                let mut choice = vec![0; self.axes.len()];
                for (k, a) in self.axes.iter().enumerate().rev() {
                    choice[k] = rest % a.values.len();
                    rest /= a.values.len();
                }
                let mut id = format!("{index:0width$}");
                for (k, a) in self.axes.iter().enumerate() {
                    id.push('-');
                    id.push_str(&sanitize(&a.values[choice[k]].label));
                }
                RunPoint { index, id, choice }
            })
            .collect()
    }

    /// The axis labels of a run, one per axis.
    pub fn labels(&self, p: &RunPoint) -> Vec<String> {
        self.axes
            .iter()
            .zip(&p.choice)
            .map(|(a, &c)| a.values[c].label.clone())
            .collect()
    }

    /// A fingerprint of the sweep's shape (name, axes, labels), so `ksim merge` refuses to join
    /// shards of different sweeps. FNV-1a of a canonical text; stable across builds.
    pub fn fingerprint(&self) -> String {
        let mut text = self.name.clone();
        for a in &self.axes {
            text.push('\n');
            text.push_str(&a.name);
            for v in &a.values {
                text.push('\t');
                text.push_str(&v.label);
            }
        }
        format!("{:016x}", ksim_trace::generator::fnv1a(text.as_bytes()))
    }

    /// The scenario of one run: the base with the point's settings applied, plus the scale
    /// factor (applied to traces when the plan is built) and scheduler edits.
    pub fn scenario_for(&self, p: &RunPoint) -> RunScenario {
        let mut scenario = self.base.clone();
        let mut scheduler: Option<KubeSchedulerConfiguration> = None;
        let mut edits: Vec<&Setting> = Vec::new();
        let mut scale = 1.0;
        let mut controller_scale = 1.0;
        for (a, &c) in self.axes.iter().zip(&p.choice) {
            match &a.values[c].setting {
                Setting::Seed(s) => scenario.seed = *s,
                Setting::KubernetesVersion(v) => scenario.kubernetes_version = Some(*v),
                Setting::PoolCount(i, n) => {
                    if let Some(pool) = scenario.cluster.pools.get_mut(*i) {
                        pool.count = *n;
                    }
                }
                Setting::PoolShape(i, t) => {
                    if let Some(pool) = scenario.cluster.pools.get_mut(*i) {
                        pool.template = t.clone();
                    }
                }
                Setting::Scale(f) => scale *= *f,
                Setting::ControllerScale(f) => controller_scale *= *f,
                Setting::Scheduler(cfg) => scheduler = cfg.as_deref().cloned(),
                s @ (Setting::ScoringStrategy(_) | Setting::PluginWeight(..)) => edits.push(s),
            }
        }
        crate::scale::scale_generators(&mut scenario, scale);
        RunScenario {
            scenario,
            scheduler,
            edits: edits.into_iter().cloned().collect(),
            scale,
            controller_scale: controller_scale * scale,
        }
    }
}

/// A run's scenario before planning.
#[derive(Debug, Clone)]
pub struct RunScenario {
    pub scenario: Scenario,
    /// Replaces the scenario's configuration when set.
    pub scheduler: Option<KubeSchedulerConfiguration>,
    /// Scoring strategy and weight edits, applied to the configuration in axis order.
    pub edits: Vec<Setting>,
    /// The workload scale factor (generators are already scaled; traces are scaled as read).
    pub scale: f64,
    /// The multiplier of the workload controllers' replicas: `controllerScale` × `workloadScale`.
    pub controller_scale: f64,
}

impl RunScenario {
    /// Builds the plan: files read, traces opened (and scaled), the configuration edited.
    pub fn plan(
        &self,
        source: &str,
        base_dir: &Path,
    ) -> Result<ksim_trace::ScenarioPlan, SweepError> {
        let mut scenario = self.scenario.clone();
        if self.scheduler.is_some() {
            // The axis replaces the configuration; planning still reads everything else.
            scenario.scheduler = None;
        }
        // Scaled traces are opened here and wrapped; the plan keeps only the generators.
        let traces = if self.scale != 1.0 {
            std::mem::take(&mut scenario.workload.traces)
        } else {
            Vec::new()
        };
        let mut plan = scenario.plan(source, base_dir)?;
        if let Some(cfg) = &self.scheduler {
            plan.scheduler = cfg.clone();
        }
        plan.engine.controller_scale.multiplier *= self.controller_scale;
        for e in &self.edits {
            apply_edit(&mut plan.scheduler, e);
        }
        plan.scheduler
            .validate()
            .map_err(|m| SweepError::input(format!("{source}: scheduler"), m))?;
        if !traces.is_empty() {
            let mut sources: Vec<ksim_trace::BoxedSource> = Vec::new();
            for t in &traces {
                let p = Path::new(t);
                let p = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    base_dir.join(p)
                };
                sources.push(Box::new(crate::scale::ScaledSource::new(
                    ksim_trace::open_trace(&p)?,
                    self.scale,
                    plan.engine.seed,
                )));
            }
            // Traces first, then the generators: the order an unscaled plan merges them in.
            let generators =
                std::mem::replace(&mut plan.events, ksim_trace::MergedSource::new(Vec::new()));
            sources.push(Box::new(generators));
            plan.events = ksim_trace::MergedSource::new(sources);
        }
        Ok(plan)
    }
}

/// The profiles a configuration edit applies to: all of them, or the default one when the
/// configuration lists none.
fn profiles_mut(cfg: &mut KubeSchedulerConfiguration) -> &mut Vec<Profile> {
    if cfg.profiles.is_empty() {
        cfg.profiles.push(Profile::default());
    }
    &mut cfg.profiles
}

/// Applies a scoring-strategy or weight edit to every profile.
pub fn apply_edit(cfg: &mut KubeSchedulerConfiguration, e: &Setting) {
    match e {
        Setting::ScoringStrategy(v) => {
            for p in profiles_mut(cfg) {
                let entry = match p
                    .plugin_config
                    .iter_mut()
                    .position(|c| c.name == "NodeResourcesFit")
                {
                    Some(i) => &mut p.plugin_config[i],
                    None => {
                        p.plugin_config.push(ksim_api::config::PluginConfig {
                            name: "NodeResourcesFit".into(),
                            args: serde_json::json!({}),
                        });
                        let last = p.plugin_config.len() - 1;
                        &mut p.plugin_config[last]
                    }
                };
                if !entry.args.is_object() {
                    entry.args = serde_json::json!({});
                }
                if let Some(args) = entry.args.as_object_mut() {
                    let strategy = args
                        .entry("scoringStrategy")
                        .or_insert_with(|| serde_json::json!({}));
                    match (v.get("type"), v.as_object().map(|m| m.len())) {
                        // A bare name: change the type, keep resources and shape.
                        (Some(t), Some(1)) => {
                            if !strategy.is_object() {
                                *strategy = serde_json::json!({});
                            }
                            if let Some(s) = strategy.as_object_mut() {
                                s.insert("type".into(), t.clone());
                            }
                        }
                        _ => *strategy = v.clone(),
                    }
                }
            }
        }
        Setting::PluginWeight(plugin, w) => {
            for p in profiles_mut(cfg) {
                let plugins = p.plugins.get_or_insert_with(Plugins::default);
                if *w == 0 {
                    remove_ref(&mut plugins.score, plugin);
                    plugins.score.disabled.push(PluginRef {
                        name: plugin.clone(),
                        weight: None,
                    });
                } else {
                    plugins.score.disabled.retain(|r| r.name != *plugin);
                    // An explicit Score entry wins over MultiPoint: set the weight there too.
                    for r in plugins.score.enabled.iter_mut() {
                        if r.name == *plugin {
                            r.weight = Some(*w);
                        }
                    }
                    match plugins
                        .multi_point
                        .enabled
                        .iter_mut()
                        .find(|r| r.name == *plugin)
                    {
                        Some(r) => r.weight = Some(*w),
                        None => plugins.multi_point.enabled.push(PluginRef {
                            name: plugin.clone(),
                            weight: Some(*w),
                        }),
                    }
                }
            }
        }
        _ => {}
    }
}

fn remove_ref(set: &mut PluginSet, plugin: &str) {
    set.enabled.retain(|r| r.name != plugin);
    set.disabled.retain(|r| r.name != plugin);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const BASE: &str = "name: base\nseed: 1\ncluster:\n  pools:\n    - {name: cpu, count: 2, template: {status: {capacity: {cpu: '4', memory: 8Gi, pods: '10'}}}}\nworkload:\n  generators:\n    - {name: g, arrival: {interval: 1s}, count: 10, shapes: [{requests: {cpu: '1'}}]}\n";

    #[test]
    fn bad_sweeps_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "base.yaml", BASE);
        let cases = [
            ("scenario: base.yaml\naxes: []\n", "s.yaml: axes: a sweep needs at least one axis"),
            ("scenario: base.yaml\naxes: [{seeds: [1]}]\n", "s.yaml: axes[0]: unknown variant `seeds`"),
            ("scenario: base.yaml\naxes: [{poolCount: {pool: gpu, counts: [1]}}]\n", "s.yaml: axes[0].poolCount.pool: the scenario has no pool \"gpu\""),
            ("scenario: base.yaml\naxes: [{workloadScale: [0]}]\n", "s.yaml: axes[0].workloadScale[0]: scale factor 0 is not in (0, 1000]"),
            ("scenario: base.yaml\naxes: [{seed: [1, 1]}]\n", "s.yaml: axes[0]: the value \"1\" appears twice"),
            ("scenario: base.yaml\naxes: [{controllerScale: [-1]}]\n", "s.yaml: axes[0].controllerScale[0]: scale factor -1 is not in [0, 1000]"),
            ("scenario: base.yaml\naxes: [{seed: [1]}, {seed: [2]}]\n", "s.yaml: axes[1]: the column \"seed\" is already an axis"),
            ("scenario: base.yaml\naxes: [{scoringStrategy: [Packed]}]\n", "s.yaml: axes[0].scoringStrategy[0]: unknown scoring strategy \"Packed\""),
            ("scenario: base.yaml\naxes: [{pluginWeight: {plugin: Nope, weights: [1]}}]\n", "s.yaml: axes[0].pluginWeight.plugin: \"Nope\" is not an in-tree plugin"),
            ("scenario: base.yaml\naxes: [{pluginWeight: {plugin: PodTopologySpread, weights: [-1]}}]\n", "s.yaml: axes[0].pluginWeight.weights[0]: weight -1 is not in 0..100"),
            ("scenario: missing.yaml\naxes: [{seed: [1]}]\n", "s.yaml: scenario: "),
            ("scenario: base.yaml\naxes: [{seed: [1]}]\ncolour: red\n", "s.yaml: colour: unknown field"),
        ];
        for (y, want) in cases {
            let err = parse_sweep("s.yaml", y, dir.path(), "s")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{y}\n got {err}\nwant {want}");
        }
    }

    #[test]
    fn cross_product_order_ids_and_settings() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "base.yaml", BASE);
        let y = "scenario: base.yaml\naxes:\n  - poolCount: {pool: cpu, counts: [3, 5]}\n  - workloadScale: [0.5, 2]\n  - seed: [7, 8, 9]\n";
        let s = parse_sweep("s.yaml", y, dir.path(), "mysweep").unwrap();
        assert_eq!(s.name, "mysweep");
        assert_eq!(s.len(), 12);
        let pts = s.points();
        assert_eq!(pts[0].id, "000-3-0.5-7");
        assert_eq!(pts[1].id, "001-3-0.5-8");
        assert_eq!(pts[11].id, "011-5-2-9");
        let rs = s.scenario_for(&pts[11]);
        assert_eq!(rs.scenario.seed, 9);
        assert_eq!(rs.scenario.cluster.pools[0].count, 5);
        assert_eq!(rs.scenario.workload.generators[0].count, Some(20));
        // workloadScale multiplies the controllers' replicas too.
        assert_eq!(rs.controller_scale, 2.0);
        let rs = s.scenario_for(&pts[0]);
        assert_eq!(rs.scenario.workload.generators[0].count, Some(5));
    }

    #[test]
    fn weight_and_strategy_edits_reach_the_framework() {
        let mut cfg = KubeSchedulerConfiguration::default();
        apply_edit(
            &mut cfg,
            &Setting::ScoringStrategy(serde_json::json!({"type": "MostAllocated"})),
        );
        apply_edit(
            &mut cfg,
            &Setting::PluginWeight("NodeResourcesBalancedAllocation".into(), 7),
        );
        apply_edit(
            &mut cfg,
            &Setting::PluginWeight("PodTopologySpread".into(), 0),
        );
        let fws = ksim_scheduler::framework::build_frameworks(
            &ksim_scheduler::framework::Registry::in_tree(),
            &cfg,
        )
        .unwrap();
        let w: Vec<(String, i64)> = fws[0]
            .score
            .iter()
            .map(|p| (p.plugin.name().to_string(), p.weight))
            .collect();
        assert!(
            w.contains(&("NodeResourcesBalancedAllocation".into(), 7)),
            "{w:?}"
        );
        assert!(!w.iter().any(|(n, _)| n == "PodTopologySpread"), "{w:?}");
        let args = cfg.profiles[0].args_of("NodeResourcesFit").unwrap();
        assert_eq!(args["scoringStrategy"]["type"], "MostAllocated");
    }
}
