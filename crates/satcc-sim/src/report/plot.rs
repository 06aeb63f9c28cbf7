//! Dependency-free SVG line charts for run reports.
//!
//! [`line_chart_svg`] draws one chart; [`stacked_charts_svg`] puts several
//! panels one above the other (e.g. goodput, cwnd, queue) in one file.
//! Axis ticks are "nice" numbers (1, 2 or 5 times a power of ten, Heckbert
//! 1990, "Nice numbers for graph labels", Graphics Gems I), labels use
//! fixed decimals (and k/M/G suffixes for large values), colours are
//! matplotlib's `tab10` (Vega category10), cycled with dash patterns past
//! ten series. Non-finite points are skipped and break the line; nothing
//! panics and no `NaN`/`inf` ever reaches the output.

use std::fmt::Write;

/// One line of a chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points, drawn in the given order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis label (with unit, e.g. `time (s)`).
    pub x_label: String,
    /// Y axis label (with unit).
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Lower end of the y axis (e.g. `Some(0.0)`); `None` fits the data.
    pub y_min: Option<f64>,
    /// The x axis as exactly [lo, hi] (e.g. a run's [0, duration]) rather
    /// than rounded out to nice numbers; `None` fits the data.
    pub x_range: Option<(f64, f64)>,
    /// Where the y axis ends (rounded up to a nice number), whatever the
    /// data: points above are clipped, so that one spike does not flatten
    /// every other line; a reference line at the top stays off the frame.
    /// `None` fits the data.
    pub y_max: Option<f64>,
}

/// matplotlib `tab10` / Vega category10.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
/// Dash patterns for series 11-20, 21-30, ...
const DASHES: [&str; 3] = ["6 3", "2 2", "8 3 2 3"];
/// Series drawn in the legend before "+N more".
const LEGEND_MAX: usize = 12;

const WIDTH: f64 = 900.0;
const PLOT_H: f64 = 300.0;
const MARGIN_L: f64 = 78.0;
const MARGIN_R: f64 = 28.0;
const MARGIN_T: f64 = 44.0;
const AXIS_B: f64 = 50.0;
const LEGEND_ROW: f64 = 20.0;
const LEGEND_COL_W: f64 = 200.0;
const FONT: &str = "Helvetica, Arial, sans-serif";

/// Escapes text for XML content and attribute values.
pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Characters XML 1.0 forbids.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// The nice number nearest `x` > 0: 1, 2 or 5 times a power of ten
/// (Heckbert 1990, rounding thresholds 1.5, 3 and 7).
fn nice_num(x: f64) -> f64 {
    let e = x.log10().floor();
    let p = 10f64.powf(e);
    let f = x / p;
    let nf = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    nf * p
}

/// An axis: [lo, hi] and the tick step.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Axis {
    lo: f64,
    hi: f64,
    step: f64,
}

/// Nice axis covering [lo, hi] with about five intervals. A fixed lower
/// end, if given, is kept exactly.
fn nice_axis(mut lo: f64, mut hi: f64, fixed_lo: Option<f64>) -> Axis {
    if !(lo.is_finite() && hi.is_finite()) {
        lo = 0.0;
        hi = 1.0;
    }
    if let Some(f) = fixed_lo.filter(|f| f.is_finite()) {
        lo = f;
        if hi <= lo {
            hi = lo + 1.0;
        }
    }
    if hi <= lo {
        // All equal: open a window around the value.
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        lo -= d;
        hi += d;
        if fixed_lo.is_some_and(|f| f.is_finite()) {
            lo = fixed_lo.unwrap_or(lo);
        }
    }
    // Step straight from the span (tighter than Heckbert's nice(range)
    // first, so an axis ends near the data).
    let mut step = nice_num((hi - lo) / 5.0);
    if !(step.is_finite() && step > 0.0) {
        step = 1.0;
    }
    let nlo = match fixed_lo.filter(|f| f.is_finite()) {
        Some(f) => f,
        None => (lo / step + 1e-9).floor() * step,
    };
    // A value a rounding error past a multiple of the step (60.000000001)
    // stays on it rather than adding a whole step.
    let nhi = (hi / step - 1e-9).ceil() * step;
    if !(nlo.is_finite() && nhi.is_finite() && nhi > nlo) {
        return Axis {
            lo: 0.0,
            hi: 1.0,
            step: 0.2,
        };
    }
    Axis {
        lo: nlo,
        hi: nhi,
        step,
    }
}

impl Axis {
    /// Tick values: multiples of the step inside [lo, hi].
    fn ticks(&self) -> Vec<f64> {
        let first = (self.lo / self.step - 1e-9).ceil();
        let mut v = Vec::new();
        let mut i = 0.0;
        while v.len() < 50 {
            let t = (first + i) * self.step;
            if t > self.hi + self.step * 1e-9 {
                break;
            }
            v.push(t);
            i += 1.0;
        }
        v
    }

    /// Label formatter for this axis's ticks.
    fn formatter(&self) -> TickFormat {
        let maxabs = self.lo.abs().max(self.hi.abs());
        let (scale, suffix) = if maxabs >= 1e9 {
            (1e9, "G")
        } else if maxabs >= 1e6 {
            (1e6, "M")
        } else if maxabs >= 1e4 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        let s = self.step / scale;
        let decimals = if s >= 1.0 {
            0
        } else {
            ((-s.log10()).ceil() as usize).min(9)
        };
        TickFormat {
            scale,
            suffix,
            decimals,
        }
    }
}

struct TickFormat {
    scale: f64,
    suffix: &'static str,
    decimals: usize,
}

impl TickFormat {
    fn fmt(&self, v: f64) -> String {
        if v.abs() < self.scale * 1e-12 {
            return "0".into();
        }
        let s = format!("{:.*}", self.decimals, v / self.scale);
        // No "-0" or "-0.0".
        let s = if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
            s[1..].to_string()
        } else {
            s
        };
        format!("{s}{}", self.suffix)
    }
}

/// "500.0" as "500", "2.50k" as "2.5k": a value quoted in a sentence,
/// not a column of tick labels that must line up.
fn trim_zeros(s: &str) -> String {
    let num_end = s
        .find(|ch: char| !(ch.is_ascii_digit() || ch == '.' || ch == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(num_end);
    let num = if num.contains('.') {
        num.trim_end_matches('0').trim_end_matches('.')
    } else {
        num
    };
    format!("{num}{suffix}")
}

/// A coordinate, two decimals, never NaN.
fn c(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.2}");
        if s == "-0.00" {
            "0.00".into()
        } else {
            s
        }
    } else {
        "0.00".into()
    }
}

/// Appends `c(v)`.
fn push_c(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() && v.is_sign_positive() {
        // Non-negative: never "-0.00".
        super::numfmt::push_fixed(out, v, 2);
    } else {
        out.extend_from_slice(c(v).as_bytes());
    }
}

fn data_range(chart: &Chart) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for s in &chart.series {
        for &(x, y) in &s.points {
            if x.is_finite() && y.is_finite() {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
    }
    (x0, x1, y0, y1)
}

fn legend_height(n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let cols = legend_cols();
    let items = n.min(LEGEND_MAX) + usize::from(n > LEGEND_MAX);
    items.div_ceil(cols) as f64 * LEGEND_ROW + 8.0
}

fn legend_cols() -> usize {
    (((WIDTH - MARGIN_L - MARGIN_R) / LEGEND_COL_W).floor() as usize).max(1)
}

/// Height of one panel.
fn panel_height(chart: &Chart) -> f64 {
    MARGIN_T + PLOT_H + AXIS_B + legend_height(chart.series.len()) + 6.0
}

/// Draws one panel at vertical offset `y0`; `id` keeps clip-path ids unique.
fn panel(out: &mut String, chart: &Chart, y0: f64, id: usize) {
    let px0 = MARGIN_L;
    let px1 = WIDTH - MARGIN_R;
    let py0 = y0 + MARGIN_T;
    let py1 = py0 + PLOT_H;
    let (dx0, dx1, dy0, dy1) = data_range(chart);
    let mut xa = nice_axis(dx0, dx1, None);
    if let Some((lo, hi)) = chart.x_range.filter(|(lo, hi)| lo.is_finite() && hi > lo) {
        xa = nice_axis(lo, hi, Some(lo));
        xa.hi = hi;
    }
    let top = match chart.y_max.filter(|m| m.is_finite()) {
        Some(m) if m > dy0.min(chart.y_min.unwrap_or(dy0)) => m,
        _ => dy1,
    };
    let ya = nice_axis(dy0, top, chart.y_min);
    let sx = |x: f64| px0 + (x - xa.lo) / (xa.hi - xa.lo) * (px1 - px0);
    let sy = |y: f64| py1 - (y - ya.lo) / (ya.hi - ya.lo) * (py1 - py0);

    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="16" font-weight="bold" text-anchor="middle">{}</text>"#,
        c((px0 + px1) / 2.0),
        c(y0 + 26.0),
        xml_escape(&chart.title)
    );
    // Grid and tick labels.
    let _ = writeln!(out, r##"<g stroke="#e0e0e0" stroke-width="1">"##);
    let xt = xa.ticks();
    let yt = ya.ticks();
    for &t in &xt {
        let x = c(sx(t));
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}"/>"#,
            c(py0),
            c(py1)
        );
    }
    for &t in &yt {
        let y = c(sy(t));
        let _ = writeln!(
            out,
            r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}"/>"#,
            c(px0),
            c(px1)
        );
    }
    let _ = writeln!(out, "</g>");
    let _ = writeln!(out, r##"<g font-size="12" fill="#333333">"##);
    let xf = xa.formatter();
    for &t in &xt {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            c(sx(t)),
            c(py1 + 17.0),
            xml_escape(&xf.fmt(t))
        );
    }
    let yf = ya.formatter();
    for &t in &yt {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            c(px0 - 7.0),
            c(sy(t) + 4.0),
            xml_escape(&yf.fmt(t))
        );
    }
    let _ = writeln!(out, "</g>");
    // Axis labels.
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="13" text-anchor="middle">{}</text>"#,
        c((px0 + px1) / 2.0),
        c(py1 + 38.0),
        xml_escape(&chart.x_label)
    );
    let (lx, ly) = (c(18.0), c((py0 + py1) / 2.0));
    let _ = writeln!(
        out,
        r#"<text x="{lx}" y="{ly}" font-size="13" text-anchor="middle" transform="rotate(-90 {lx} {ly})">{}</text>"#,
        xml_escape(&chart.y_label)
    );
    // Lines, clipped to the plot area.
    let _ = writeln!(
        out,
        r#"<clipPath id="clip{id}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath>"#,
        c(px0),
        c(py0),
        c(px1 - px0),
        c(py1 - py0)
    );
    let _ = writeln!(
        out,
        r#"<g clip-path="url(#clip{id})" fill="none" stroke-width="1.8" stroke-linejoin="round" stroke-linecap="round">"#
    );
    for (i, s) in chart.series.iter().enumerate() {
        let (color, dash) = style(i);
        let dash_attr = dash
            .map(|d| format!(r#" stroke-dasharray="{d}""#))
            .unwrap_or_default();
        // Split at non-finite points.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for &(x, y) in &s.points {
            if x.is_finite() && y.is_finite() {
                if let Some(r) = runs.last_mut() {
                    r.push((sx(x), sy(y)));
                }
            } else if runs.last().is_some_and(|r| !r.is_empty()) {
                runs.push(Vec::new());
            }
        }
        for r in runs.iter().filter(|r| !r.is_empty()) {
            if r.len() == 1 {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{}" cy="{}" r="3" fill="{color}" stroke="none"/>"#,
                    c(r[0].0),
                    c(r[0].1)
                );
                continue;
            }
            // The points are most of the file: formatted straight into one
            // buffer, as `c` would, without a String per coordinate.
            let mut pts = Vec::with_capacity(r.len() * 14);
            for (k, &(x, y)) in r.iter().enumerate() {
                if k > 0 {
                    pts.push(b' ');
                }
                push_c(&mut pts, x);
                pts.push(b',');
                push_c(&mut pts, y);
            }
            let _ = writeln!(
                out,
                r#"<polyline stroke="{color}"{dash_attr} points="{}"/>"#,
                std::str::from_utf8(&pts).unwrap_or_default()
            );
        }
    }
    let _ = writeln!(out, "</g>");
    // A cut axis says what it cut: the highest point, its value and time,
    // so a burst of drops clipped by the axis is not lost (issue 33).
    let peak = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .fold(None::<(f64, f64)>, |m, &(x, y)| match m {
            Some((_, my)) if my >= y => m,
            _ => Some((x, y)),
        });
    if let Some((x, y)) = peak.filter(|&(_, y)| y > ya.hi) {
        let _ = writeln!(
            out,
            r##"<text x="{}" y="{}" font-size="12" fill="#555555" text-anchor="end">off the axis: peak {} at {} s</text>"##,
            c(px1 - 4.0),
            c(py0 + 14.0),
            trim_zeros(&ya.formatter().fmt(y)),
            trim_zeros(&xa.formatter().fmt(x))
        );
    }
    // Frame.
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444444" stroke-width="1"/>"##,
        c(px0),
        c(py0),
        c(px1 - px0),
        c(py1 - py0)
    );
    // Legend below the axis label, in columns.
    let n = chart.series.len();
    if n > 0 {
        let cols = legend_cols();
        let top = py1 + AXIS_B + 4.0;
        let _ = writeln!(out, r#"<g font-size="12">"#);
        for (i, s) in chart.series.iter().take(LEGEND_MAX).enumerate() {
            let (color, dash) = style(i);
            let x = px0 + (i % cols) as f64 * LEGEND_COL_W;
            let y = top + (i / cols) as f64 * LEGEND_ROW;
            let dash_attr = dash
                .map(|d| format!(r#" stroke-dasharray="{d}""#))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{color}" stroke-width="2.5"{dash_attr}/>"#,
                c(x),
                c(y + 6.0),
                c(x + 24.0),
                c(y + 6.0)
            );
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}">{}</text>"#,
                c(x + 30.0),
                c(y + 10.0),
                xml_escape(&truncate(&s.name, 26))
            );
        }
        if n > LEGEND_MAX {
            let i = LEGEND_MAX;
            let x = px0 + (i % cols) as f64 * LEGEND_COL_W;
            let y = top + (i / cols) as f64 * LEGEND_ROW;
            let _ = writeln!(
                out,
                r##"<text x="{}" y="{}" fill="#555555" font-style="italic">+{} more</text>"##,
                c(x),
                c(y + 10.0),
                n - LEGEND_MAX
            );
        }
        let _ = writeln!(out, "</g>");
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn style(i: usize) -> (&'static str, Option<&'static str>) {
    let color = PALETTE[i % PALETTE.len()];
    let round = i / PALETTE.len();
    let dash = if round == 0 {
        None
    } else {
        Some(DASHES[(round - 1) % DASHES.len()])
    };
    (color, dash)
}

fn svg(charts: &[&Chart]) -> String {
    let heights: Vec<f64> = charts.iter().map(|ch| panel_height(ch)).collect();
    let total: f64 = heights.iter().sum::<f64>().max(1.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}">"#,
        w = c(WIDTH),
        h = c(total)
    );
    let _ = writeln!(
        out,
        r##"<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>"##,
        c(WIDTH),
        c(total)
    );
    let mut y = 0.0;
    for (i, (ch, h)) in charts.iter().zip(&heights).enumerate() {
        panel(&mut out, ch, y, i);
        y += h;
    }
    out.push_str("</svg>\n");
    out
}

/// One chart as a standalone SVG document.
pub fn line_chart_svg(chart: &Chart) -> String {
    svg(&[chart])
}

/// Several charts stacked vertically in one SVG document, sharing the
/// width (e.g. goodput, cwnd and queue over the same time axis).
pub fn stacked_charts_svg(charts: &[Chart]) -> String {
    let refs: Vec<&Chart> = charts.iter().collect();
    svg(&refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Crude well-formedness: every `<tag` is closed by `</tag>` or `/>`
    /// in the right order.
    fn balanced(s: &str) -> bool {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = s;
        while let Some(i) = rest.find('<') {
            rest = &rest[i + 1..];
            let end = match rest.find('>') {
                Some(e) => e,
                None => return false,
            };
            let tag = &rest[..end];
            if let Some(name) = tag.strip_prefix('/') {
                if stack.pop().as_deref() != Some(name.trim()) {
                    return false;
                }
            } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
                let name = tag.split_whitespace().next().unwrap_or("");
                stack.push(name.to_string());
            }
            // Raw '<' or '&' never appear inside text.
            rest = &rest[end + 1..];
        }
        stack.is_empty()
    }

    fn no_bad_numbers(s: &str) {
        assert!(
            !s.contains("NaN") && !s.contains("inf"),
            "bad number in SVG"
        );
    }

    fn sample() -> Chart {
        Chart {
            title: "Goodput <TFRC & TCP>".into(),
            x_label: "time (s)".into(),
            y_label: "goodput (b/s)".into(),
            series: vec![
                Series {
                    name: "tfrc \"1\"".into(),
                    points: (0..50)
                        .map(|i| (i as f64 * 0.5, 4e6 + 1e6 * (i as f64 / 5.0).sin()))
                        .collect(),
                },
                Series {
                    name: "reno".into(),
                    points: (0..50)
                        .map(|i| (i as f64 * 0.5, 3e6 + 2e5 * i as f64 % 7e5))
                        .collect(),
                },
            ],
            y_min: Some(0.0),
            x_range: None,
            y_max: None,
        }
    }

    #[test]
    fn well_formed_with_names_and_points() {
        let s = line_chart_svg(&sample());
        assert!(balanced(&s), "{s}");
        no_bad_numbers(&s);
        assert!(s.contains("Goodput &lt;TFRC &amp; TCP&gt;"));
        assert!(s.contains("tfrc &quot;1&quot;") && s.contains(">reno<"));
        let polys: Vec<&str> = s.lines().filter(|l| l.starts_with("<polyline")).collect();
        assert_eq!(polys.len(), 2);
        for p in polys {
            let pts = p
                .split("points=\"")
                .nth(1)
                .unwrap()
                .trim_end_matches("\"/>");
            assert_eq!(pts.split(' ').count(), 50);
        }
        // Large values get an M suffix; y starts at 0.
        assert!(s.contains(">0<") && s.contains("M<"), "{s}");
    }

    /// A spike above `y_max` no longer sets the scale: the axis ends at
    /// a nice number just above `y_max`, the spike is clipped.
    #[test]
    fn y_max_cuts_a_spike() {
        let mut ch = Chart {
            series: vec![Series {
                name: "g".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, 500.0), (3.0, 2.0)],
            }],
            y_min: Some(0.0),
            ..Default::default()
        };
        let fitted = line_chart_svg(&ch);
        assert!(fitted.contains(">500<"), "{fitted}");
        ch.y_max = Some(2.5);
        let cut = line_chart_svg(&ch);
        assert!(!cut.contains(">500<") && !cut.contains(">100<"), "{cut}");
        assert!(cut.contains(">3.0<") || cut.contains(">3<"), "{cut}");
        // ...and says what it cut (the burst is not lost from sight).
        assert!(cut.contains("off the axis: peak 500 at 2"), "{cut}");
        assert!(!fitted.contains("off the axis"), "{fitted}");
        // A y_max above the data lifts the axis past it.
        ch.y_max = Some(900.0);
        assert!(line_chart_svg(&ch).contains(">1000<"));
    }

    #[test]
    fn degenerate_inputs() {
        let mut ch = Chart {
            title: String::new(),
            ..Default::default()
        };
        for series in [
            vec![],
            vec![Series {
                name: "empty".into(),
                points: vec![],
            }],
            vec![Series {
                name: "one".into(),
                points: vec![(1.0, 1.0)],
            }],
            vec![Series {
                name: "flat".into(),
                points: vec![(0.0, 5.0), (1.0, 5.0), (2.0, 5.0)],
            }],
            vec![Series {
                name: "nan".into(),
                points: vec![
                    (0.0, 1.0),
                    (1.0, f64::NAN),
                    (2.0, 2.0),
                    (3.0, 3.0),
                    (f64::INFINITY, 1.0),
                ],
            }],
            vec![Series {
                name: "allnan".into(),
                points: vec![(f64::NAN, f64::NAN)],
            }],
            vec![Series {
                name: "huge".into(),
                points: vec![(0.0, -1e300), (1.0, 1e300)],
            }],
            vec![Series {
                name: "tiny".into(),
                points: vec![(0.0, 1e-12), (1e-9, 3e-12)],
            }],
        ] {
            ch.series = series;
            for y_min in [None, Some(0.0), Some(f64::NAN), Some(100.0)] {
                ch.y_min = y_min;
                let s = line_chart_svg(&ch);
                assert!(balanced(&s), "{s}");
                no_bad_numbers(&s);
                for se in &ch.series {
                    assert!(s.contains(&se.name));
                }
            }
        }
        // The NaN gap splits the line: a lone point, then a 2-point line.
        ch.series = vec![Series {
            name: "gap".into(),
            points: vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 2.0), (3.0, 3.0)],
        }];
        let s = line_chart_svg(&ch);
        assert_eq!(s.matches("<polyline").count(), 1);
        assert_eq!(s.matches("<circle").count(), 1);
    }

    #[test]
    fn many_series_legend() {
        let ch = Chart {
            title: "flows".into(),
            series: (0..20)
                .map(|i| Series {
                    name: format!("flow-{i}"),
                    points: vec![(0.0, i as f64), (1.0, i as f64 + 1.0)],
                })
                .collect(),
            ..Default::default()
        };
        let s = line_chart_svg(&ch);
        assert!(balanced(&s));
        assert!(s.contains("+8 more"));
        assert!(s.contains(">flow-11<") && !s.contains(">flow-12<"));
        assert_eq!(s.matches("<polyline").count(), 20);
        assert!(s.contains("stroke-dasharray"));
    }

    #[test]
    fn nice_ticks() {
        let a = nice_axis(0.0, 9.3, None);
        assert_eq!((a.lo, a.hi, a.step), (0.0, 10.0, 2.0));
        assert_eq!(a.ticks(), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let a = nice_axis(3.2e6, 4.9e6, None);
        assert_eq!(a.step, 5e5);
        assert_eq!(a.formatter().fmt(3.5e6), "3.5M");
        let a = nice_axis(0.013, 0.087, None);
        assert_eq!(a.step, 0.01);
        assert_eq!(a.formatter().fmt(0.03), "0.03");
        let a = nice_axis(5.0, 5.0, None);
        assert!(a.lo < 5.0 && a.hi > 5.0);
        let a = nice_axis(-0.4, 0.4, None);
        assert_eq!(a.formatter().fmt(-0.0), "0");
        assert_eq!(a.formatter().fmt(-0.2), "-0.2");
        // Ends near the data: 24.5 s gives 0..25 by 5.
        let a = nice_axis(0.0, 24.5, None);
        assert_eq!((a.lo, a.hi, a.step), (0.0, 25.0, 5.0));
    }

    #[test]
    fn stacked_panels() {
        let mut b = sample();
        b.title = "cwnd".into();
        let s = stacked_charts_svg(&[sample(), b]);
        assert!(balanced(&s));
        assert_eq!(s.matches("<svg").count(), 1);
        assert!(s.contains("clip0") && s.contains("clip1"));
        assert_eq!(s.matches("<polyline").count(), 4);
        assert!(stacked_charts_svg(&[]).contains("</svg>"));
    }

    /// Values of attribute `name` (e.g. ` y1`) in `s`.
    fn attr(s: &str, name: &str) -> Vec<f64> {
        let key = format!(" {name}=\"");
        s.match_indices(&key)
            .map(|(i, _)| {
                let v = &s[i + key.len()..];
                v[..v.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    }

    /// Panels stack in order, each in its own band of the document, however
    /// tall its legend: a 15-series panel (legend in five rows, "+3 more")
    /// between two 2-series ones overlaps neither, and the last ends inside
    /// the document. Set $SATCC_PLOT_SAMPLE to a path to also write the
    /// document there, to look at by eye.
    #[test]
    fn panels_stack_without_overlap() {
        let mut cw = sample();
        cw.title = "Congestion window".into();
        cw.y_label = "cwnd (packets)".into();
        cw.y_min = Some(0.0);
        for s in &mut cw.series {
            for p in &mut s.points {
                p.1 /= 1e5;
            }
        }
        let mut many = sample();
        many.title = "Per-flow goodput".into();
        many.series = (0..15)
            .map(|k| Series {
                name: format!("tfrc-{k}"),
                points: (0..200)
                    .map(|i| {
                        (
                            i as f64 * 0.1,
                            1e6 * (1.0 + k as f64 * 0.1) + 3e5 * ((i + 7 * k) as f64 / 9.0).sin(),
                        )
                    })
                    .collect(),
            })
            .collect();
        let s = stacked_charts_svg(&[sample(), many, cw]);
        if let Ok(path) = std::env::var("SATCC_PLOT_SAMPLE") {
            std::fs::write(path, &s).unwrap();
        }
        assert!(balanced(&s), "{s}");
        no_bad_numbers(&s);
        assert_eq!(s.matches("<polyline").count(), 2 + 15 + 2);
        assert_eq!(s.matches("+3 more").count(), 1);
        for k in 0..3 {
            assert_eq!(s.matches(&format!("id=\"clip{k}\"")).count(), 1);
            assert_eq!(s.matches(&format!("url(#clip{k})")).count(), 1);
        }
        // Split at the titles; a panel's top is 26 above its title.
        let starts: Vec<usize> = s
            .match_indices("<text")
            .filter(|(i, _)| s[*i..].split('>').next().unwrap().contains("bold"))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(starts.len(), 3);
        let height = attr(&s[..starts[0]], "height")[0];
        let tops: Vec<f64> = starts
            .iter()
            .map(|&i| attr(&s[i..], "y")[0] - 26.0)
            .collect();
        assert_eq!(tops[0], 0.0);
        let titles = [
            "Goodput &lt;TFRC &amp; TCP&gt;",
            "Per-flow goodput",
            "Congestion window",
        ];
        for k in 0..3 {
            let seg = &s[starts[k]..*starts.get(k + 1).unwrap_or(&s.len())];
            assert!(seg.contains(titles[k]), "panel {k}");
            let bottom = tops.get(k + 1).copied().unwrap_or(height);
            let mut ys: Vec<f64> = ["y", "y1", "y2", "cy"]
                .iter()
                .flat_map(|a| attr(seg, a))
                .collect();
            // Frames and clip rectangles: their lower edges.
            for line in seg.lines().filter(|l| l.contains("<rect")) {
                ys.push(attr(line, "y")[0] + attr(line, "height")[0]);
            }
            let (lo, hi) = ys
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &y| {
                    (a.min(y), b.max(y))
                });
            assert!(
                lo >= tops[k] && hi <= bottom - 2.0,
                "panel {k} spans {lo}..{hi}, its band {}..{bottom}",
                tops[k]
            );
        }
        // The many-series panel's legend is taller than the others'.
        assert!(tops[2] - tops[1] > tops[1] - tops[0]);
        assert_eq!(height - tops[2], tops[1] - tops[0]);
    }
}
