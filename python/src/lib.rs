//! `satcc._satcc`: the Rust half of the Python package. The Python modules
//! in `python/satcc/` wrap it in the public API (`satcc.Scenario`,
//! `satcc.run`, `satcc.sweep`, ...); this module only moves data across:
//! scenario trees in, summaries (JSON text) and time series (column
//! buffers, one per column, never a Python object per row) out.
//!
//! Errors in the scenario or the run raise `satcc.ScenarioError` (defined
//! in `satcc/_errors.py`) with the file, field, value and problem; nothing
//! here unwraps user input.

use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};
use satcc_sim::report::series::Series;
use satcc_sim::report::Summary;
use satcc_sim::scenario::{self, Scenario, ScenarioError};
use satcc_sim::store;

/// A scenario as its TOML tree (what `--set` edits), checked to type and
/// validate as a scenario. Immutable: `set` returns a new tree.
#[pyclass(module = "satcc._satcc", frozen)]
struct Tree {
    root: toml::Value,
    file: String,
}

/// The value at a dotted field path (`flows.0.count`, or as serde names
/// it, `flows[0].count`), as canonical JSON text.
fn value_at(root: &toml::Value, field: &str) -> Option<String> {
    let path = field.replace('[', ".").replace(']', "");
    let mut cur = root;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        cur = match cur {
            toml::Value::Table(t) => t.get(part)?,
            toml::Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(store::canonical_json(cur))
}

/// `satcc.ScenarioError` for `e`, with the value found at its field in
/// `root` (or `value` when given).
fn scenario_error(
    py: Python<'_>,
    e: &ScenarioError,
    root: Option<&toml::Value>,
    value: Option<String>,
) -> PyErr {
    let value = value.or_else(|| {
        root.filter(|_| !e.field.is_empty())
            .and_then(|r| value_at(r, &e.field))
    });
    let made = py
        .import("satcc._errors")
        .and_then(|m| m.getattr("ScenarioError"))
        .and_then(|cls| {
            let kw = PyDict::new(py);
            kw.set_item("file", &e.file)?;
            kw.set_item("field", &e.field)?;
            kw.set_item("value", value.as_deref())?;
            kw.set_item("problem", &e.message)?;
            cls.call((e.to_string(),), Some(&kw))
        });
    match made {
        Ok(obj) => PyErr::from_value(obj),
        // The package's Python half is missing: still an exception.
        Err(_) => PyValueError::new_err(e.to_string()),
    }
}

/// A Python value as a TOML value. Strings go through the `--set` parser
/// when `as_override` (so `"1e-4"` is a number and `"16Mbps"` a string, as
/// on the command line), else stay strings.
fn to_toml(v: &Bound<'_, PyAny>, as_override: bool) -> PyResult<toml::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if let Ok(s) = v.downcast::<PyString>() {
        let s: String = s.extract()?;
        let s = s.as_str();
        return Ok(if as_override {
            scenario::parse_override_value(s.trim())
        } else {
            toml::Value::String(s.to_string())
        });
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("scenario keys must be strings"))?;
            t.insert(k, to_toml(&x, false)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut a = Vec::new();
        for x in v.try_iter()? {
            a.push(to_toml(&x?, false)?);
        }
        return Ok(toml::Value::Array(a));
    }
    if v.is_none() {
        return Err(PyTypeError::new_err(
            "None has no TOML value (leave the field out instead)",
        ));
    }
    // Integers (numpy's too) before floats; a float never extracts as i64.
    if !v.is_instance_of::<PyFloat>() {
        if let Ok(i) = v.extract::<i64>() {
            return Ok(toml::Value::Integer(i));
        }
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(toml::Value::Float(f));
    }
    Err(PyTypeError::new_err(format!(
        "cannot put a {} in a scenario (str, int, float, bool, list or dict)",
        v.get_type().name()?
    )))
}

impl Tree {
    /// Checks that `root` is a valid scenario, keeping it if so.
    fn checked(py: Python<'_>, root: toml::Value, file: String) -> PyResult<Tree> {
        Scenario::from_tree(root.clone(), &file)
            .map_err(|e| scenario_error(py, &e, Some(&root), None))?;
        Ok(Tree { root, file })
    }
}

#[pymethods]
impl Tree {
    /// Reads a scenario file.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Tree> {
        let root =
            Scenario::load_tree(&path, &[]).map_err(|e| scenario_error(py, &e, None, None))?;
        Tree::checked(py, root, path.display().to_string())
    }

    /// Parses scenario text; `file` names it in errors.
    #[staticmethod]
    fn from_toml(py: Python<'_>, text: &str, file: &str) -> PyResult<Tree> {
        let root =
            scenario::parse_tree(text, file).map_err(|e| scenario_error(py, &e, None, None))?;
        Tree::checked(py, root, file.to_string())
    }

    /// A scenario from nested dicts and lists, as the TOML file would read.
    #[staticmethod]
    fn from_obj(py: Python<'_>, obj: &Bound<'_, PyAny>, file: &str) -> PyResult<Tree> {
        let root = to_toml(obj, false)?;
        if !root.is_table() {
            return Err(PyTypeError::new_err("a scenario is a dict"));
        }
        Tree::checked(py, root, file.to_string())
    }

    /// A copy with the field at dotted `key` set to `value`.
    fn set(&self, py: Python<'_>, key: &str, value: &Bound<'_, PyAny>) -> PyResult<Tree> {
        let v = to_toml(value, true)?;
        let shown = store::canonical_json(&v);
        let mut root = self.root.clone();
        scenario::set_value(&mut root, key, v).map_err(|mut e| {
            e.file = self.file.clone();
            scenario_error(py, &e, None, Some(shown))
        })?;
        Tree::checked(py, root, self.file.clone())
    }

    /// A copy with every (key, value) of `items` set in order and the
    /// result checked once: for changes that are valid only together
    /// (RED's min_th and max_th moving past each other, say).
    fn set_many(&self, py: Python<'_>, items: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<Tree> {
        let mut root = self.root.clone();
        for (key, value) in &items {
            let v = to_toml(value, true)?;
            let shown = store::canonical_json(&v);
            scenario::set_value(&mut root, key, v).map_err(|mut e| {
                e.file = self.file.clone();
                scenario_error(py, &e, None, Some(shown))
            })?;
        }
        Tree::checked(py, root, self.file.clone())
    }

    /// The scenario as TOML text.
    fn to_toml(&self) -> PyResult<String> {
        toml::to_string(&self.root).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The scenario as canonical JSON (sorted keys): the store's content.
    fn to_json(&self) -> String {
        store::canonical_json(&self.root)
    }

    /// The store key of a run with `seed`.
    fn key(&self, seed: u64) -> String {
        store::key(&self.root, seed)
    }

    /// The file the scenario came from (or the name it was given).
    #[getter]
    fn file(&self) -> String {
        self.file.clone()
    }

    /// The scenario's own seed.
    #[getter]
    fn seed(&self, py: Python<'_>) -> PyResult<u64> {
        Scenario::from_tree(self.root.clone(), &self.file)
            .map(|s| s.seed)
            .map_err(|e| scenario_error(py, &e, Some(&self.root), None))
    }
}

/// Native-endian bytes of f64 values, for `numpy.frombuffer`.
fn f64_bytes<'py>(py: Python<'py>, v: impl Iterator<Item = f64>) -> Bound<'py, PyBytes> {
    let b: Vec<u8> = v.flat_map(f64::to_ne_bytes).collect();
    PyBytes::new(py, &b)
}

/// Native-endian bytes of u32 values.
fn u32_bytes<'py>(py: Python<'py>, v: impl Iterator<Item = u32>) -> Bound<'py, PyBytes> {
    let b: Vec<u8> = v.flat_map(u32::to_ne_bytes).collect();
    PyBytes::new(py, &b)
}

/// The series as two tables of columns in long form, rows ordered by time
/// then flow (link), as in flows.csv and links.csv: each numeric column one
/// buffer; names as a dictionary (`names`) and codes into it.
fn series_columns<'py>(py: Python<'py>, s: &Series) -> PyResult<Bound<'py, PyDict>> {
    let n = s.t.len();
    let flows = PyDict::new(py);
    let nf = s.flows.len();
    flows.set_item(
        "time_s",
        f64_bytes(py, s.t.iter().flat_map(|t| (0..nf).map(move |_| *t))),
    )?;
    flows.set_item("flow", u32_bytes(py, (0..n).flat_map(|_| 0..nf as u32)))?;
    flows.set_item(
        "names",
        s.flows.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
    )?;
    flows.set_item(
        "protocols",
        s.flows
            .iter()
            .map(|f| f.protocol.clone())
            .collect::<Vec<_>>(),
    )?;
    type FlowCol = fn(&satcc_sim::report::series::FlowSeries) -> &Vec<f64>;
    let fcols: [(&str, FlowCol); 7] = [
        ("goodput_bps", |f| &f.goodput_bps),
        ("cwnd", |f| &f.cwnd),
        ("rtt_s", |f| &f.rtt_s),
        ("rate_bps", |f| &f.rate_bps),
        ("x_recv_bps", |f| &f.x_recv_bps),
        ("p", |f| &f.p),
        ("feedback", |f| &f.feedback),
    ];
    for (name, col) in fcols {
        let v = (0..n).flat_map(|i| {
            s.flows
                .iter()
                .map(move |f| col(f).get(i).copied().unwrap_or(f64::NAN))
        });
        flows.set_item(name, f64_bytes(py, v))?;
    }
    let links = PyDict::new(py);
    let nl = s.links.len();
    links.set_item(
        "time_s",
        f64_bytes(py, s.t.iter().flat_map(|t| (0..nl).map(move |_| *t))),
    )?;
    links.set_item("link", u32_bytes(py, (0..n).flat_map(|_| 0..nl as u32)))?;
    links.set_item(
        "names",
        s.links.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
    )?;
    type LinkCol = fn(&satcc_sim::report::series::LinkSeries) -> &Vec<f64>;
    let lcols: [(&str, LinkCol); 9] = [
        ("queue_pkts", |l| &l.queue_pkts),
        ("utilization", |l| &l.utilization),
        ("drops", |l| &l.drops),
        ("drops_queue", |l| &l.drops_queue),
        ("drops_red", |l| &l.drops_red),
        ("drops_error", |l| &l.drops_error),
        ("drops_ttl", |l| &l.drops_ttl),
        ("drops_hook", |l| &l.drops_hook),
        ("drops_link_down", |l| &l.drops_link_down),
    ];
    for (name, col) in lcols {
        let v = (0..n).flat_map(|i| {
            s.links
                .iter()
                .map(move |l| col(l).get(i).copied().unwrap_or(f64::NAN))
        });
        links.set_item(name, f64_bytes(py, v))?;
    }
    let out = PyDict::new(py);
    out.set_item("flows", flows)?;
    out.set_item("links", links)?;
    Ok(out)
}

/// The memory runs may take: `max_memory` (bytes, or a size such as
/// `"4GB"`), else 80% of MemAvailable in /proc/meminfo, as `satcc run
/// --max-memory` (None where that cannot be read). With how it was chosen.
fn memory_limit(max_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Option<(u64, String)>> {
    if let Some(m) = max_memory.filter(|m| !m.is_none()) {
        if let Ok(b) = m.extract::<u64>() {
            return Ok(Some((b, format!("max_memory={b}"))));
        }
        let s: String = m.extract().map_err(|_| {
            PyTypeError::new_err("max_memory: a number of bytes or a size such as \"4GB\"")
        })?;
        return scenario::units::parse_bytes(&s)
            .map(|b| Some((b, format!("max_memory={s:?}"))))
            .map_err(|e| PyValueError::new_err(format!("max_memory: {e}")));
    }
    let avail_kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    Ok(avail_kb.map(|kb| {
        (
            kb * 1024 / 10 * 8,
            format!(
                "80% of the {} available; max_memory= to change",
                scenario::limits::fmt_bytes(kb * 1024)
            ),
        )
    }))
}

/// Refuses (`satcc.ScenarioError` naming the field that grows it most) a
/// scenario whose estimated memory, `runs` times over, exceeds the limit:
/// the CLI's guard (issue 33: `record.interval = "100ns"` used to abort
/// the interpreter trying to allocate 25.6 GB).
fn check_memory(
    py: Python<'_>,
    sc: &Scenario,
    root: &toml::Value,
    file: &str,
    series: bool,
    runs: u64,
    max_memory: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let Some((max, how)) = memory_limit(max_memory)? else {
        return Ok(());
    };
    let est = sc.memory_estimate(series);
    let total = est.bytes.saturating_mul(runs.max(1));
    if total <= max {
        return Ok(());
    }
    use scenario::limits::fmt_bytes;
    let at_once = if runs > 1 {
        format!(" ({runs} runs at once; jobs= for fewer)")
    } else {
        String::new()
    };
    let e = ScenarioError {
        file: file.to_string(),
        field: est.field.clone(),
        message: format!(
            "the run needs about {}{at_once}, over the limit of {} ({how}): {}",
            fmt_bytes(total),
            fmt_bytes(max),
            est.why
        ),
    };
    Err(scenario_error(py, &e, Some(root), None))
}

/// Checks that `runs` runs of `tree` at once fit in memory (with the time
/// series when `series`); raises `satcc.ScenarioError` if not.
#[pyfunction]
#[pyo3(signature = (tree, series=false, runs=1, max_memory=None))]
fn check_fits(
    py: Python<'_>,
    tree: &Tree,
    series: bool,
    runs: u64,
    max_memory: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let sc = Scenario::from_tree(tree.root.clone(), &tree.file)
        .map_err(|e| scenario_error(py, &e, Some(&tree.root), None))?;
    check_memory(py, &sc, &tree.root, &tree.file, series, runs, max_memory)
}

/// Runs `tree` (with `seed` if given, else its own) with the GIL released.
/// Returns the summary as the JSON text of `summary.json`, the wall time,
/// and with `series` the time series columns.
#[pyfunction]
#[pyo3(signature = (tree, seed=None, series=false, max_memory=None))]
fn run<'py>(
    py: Python<'py>,
    tree: &Tree,
    seed: Option<u64>,
    series: bool,
    max_memory: Option<&Bound<'py, PyAny>>,
) -> PyResult<(String, f64, Option<Bound<'py, PyDict>>)> {
    let root = match seed {
        Some(s) => store::with_seed(&tree.root, s),
        None => tree.root.clone(),
    };
    let sc = Scenario::from_tree(root.clone(), &tree.file)
        .map_err(|e| scenario_error(py, &e, Some(&root), None))?;
    check_memory(py, &sc, &root, &tree.file, series, 1, max_memory)?;
    let opts = satcc_sim::RunOptions {
        series,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    // The simulation touches no Python object: other threads (a sweep's
    // other runs) go on meanwhile.
    let out = py
        .allow_threads(|| satcc_sim::run(&sc, &opts))
        .map_err(|e| {
            let se = ScenarioError {
                file: tree.file.clone(),
                field: e.field.clone(),
                message: e.message.clone(),
            };
            scenario_error(py, &se, Some(&root), None)
        })?;
    let wall = started.elapsed().as_secs_f64();
    let mut summary = out.summary;
    summary.wall_s = None;
    // Exactly the text `satcc run` writes to summary.json (without its
    // final newline).
    let json =
        serde_json::to_string_pretty(&summary).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let cols = match &out.series {
        Some(s) => Some(series_columns(py, s)?),
        None => None,
    };
    Ok((json, wall, cols))
}

/// The summary stored under `key` in `dir`, if any, as the JSON text
/// [`run`] returns (fields in `summary.json`'s order); a record that does
/// not read back as a summary counts as missing.
#[pyfunction]
fn store_get(dir: PathBuf, key: &str) -> Option<String> {
    let summary: Summary = serde_json::from_value(store::get(&dir, key)?).ok()?;
    serde_json::to_string_pretty(&summary).ok()
}

/// Stores a run's summary (JSON text from [`run`]) under its key; returns
/// the key.
#[pyfunction]
fn store_put(
    dir: PathBuf,
    tree: &Tree,
    seed: u64,
    params: Vec<(String, Bound<'_, PyAny>)>,
    summary_json: &str,
) -> PyResult<String> {
    let summary: Summary = serde_json::from_str(summary_json)
        .map_err(|e| PyValueError::new_err(format!("not a satcc summary: {e}")))?;
    let params = params
        .iter()
        .map(|(k, v)| Ok((k.clone(), to_toml(v, true)?)))
        .collect::<PyResult<Vec<_>>>()?;
    let key = store::key(&tree.root, seed);
    let rec = store::record(&key, &tree.root, seed, &params, &summary);
    store::put(&dir, &rec)
        .map_err(|e| PyOSError::new_err(format!("{}: cannot write: {e}", dir.display())))?;
    Ok(key)
}

#[pymodule]
fn _satcc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tree>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check_fits, m)?)?;
    m.add_function(wrap_pyfunction!(store_get, m)?)?;
    m.add_function(wrap_pyfunction!(store_put, m)?)?;
    m.add("VERSION", store::VERSION)?;
    m.add("STORE_FORMAT", store::FORMAT)?;
    Ok(())
}
