//! Charts drawn as inline SVG on the server side: line charts (linear or logarithmic
//! axes, and HdrHistogram's "1/(1-p)" percentile axis) and grouped bar charts with error
//! bars.
//!
//! SVG written at report time needs no script, no network and no library: the file
//! opens anywhere, prints, and cannot fail to draw. Colours come from CSS classes
//! (`s0`…`s7`) whose variables the page sets for light and dark schemes, and every
//! chart scales to its container through its `viewBox`.

use std::fmt::Write as _;

/// Escapes text for HTML and SVG (they share the rule; html.rs uses it too).
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const W: f64 = 720.0;
const H: f64 = 300.0;
const L: f64 = 64.0;
const R: f64 = 28.0;
/// The plot's top: the legend sits above it, clear of the lines.
const T: f64 = 30.0;
const B: f64 = 48.0;

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear from zero (or the smallest value, if negative).
    Linear,
    /// Base-10 logarithmic (values ≤ 0 are left out).
    Log,
    /// HdrHistogram's percentile axis: x is a percentile, drawn at log10(1/(1-p/100)).
    Percentile,
}

/// One line of a chart.
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points (x, y) in data units.
    pub points: Vec<(f64, f64)>,
}

/// A line chart.
pub struct LineChart<'a> {
    /// Accessible title.
    pub title: &'a str,
    /// X axis label.
    pub x_label: &'a str,
    /// Y axis label.
    pub y_label: &'a str,
    /// X mapping.
    pub x_scale: Scale,
    /// Y mapping.
    pub y_scale: Scale,
    /// The lines.
    pub series: Vec<Series>,
}

/// Round tick steps: 1, 2, 5 × 10^k, about `n` of them over [lo, hi].
fn linear_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

/// `1.2k`, `35`, `0.25`, `3M`.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
}

impl Axis {
    fn fit(scale: Scale, values: impl Iterator<Item = f64>) -> Axis {
        let vals: Vec<f64> = values
            .map(|v| Axis::raw(scale, v))
            .filter(|v| v.is_finite())
            .collect();
        let (mut lo, mut hi) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        match scale {
            Scale::Linear => {
                lo = lo.min(0.0);
                if hi <= lo {
                    hi = lo + 1.0;
                }
                hi += (hi - lo) * 0.05;
            }
            // Decades; a value a rounding error past a power of ten stays in its decade.
            Scale::Log => {
                lo = (lo + 1e-9).floor();
                hi = (hi - 1e-9).ceil().max(lo + 1.0);
            }
            Scale::Percentile => {
                lo = 0.0;
                hi = (hi - 1e-9).ceil().max(2.0);
            }
        }
        Axis { scale, lo, hi }
    }

    /// The value in axis units (log10 for the log scales).
    fn raw(scale: Scale, v: f64) -> f64 {
        match scale {
            Scale::Linear => v,
            Scale::Log if v > 0.0 => v.log10(),
            Scale::Log => f64::NAN,
            Scale::Percentile if v < 100.0 => (1.0 / (1.0 - v / 100.0)).log10(),
            Scale::Percentile => f64::NAN,
        }
    }

    fn frac(&self, v: f64) -> f64 {
        (Axis::raw(self.scale, v) - self.lo) / (self.hi - self.lo)
    }

    /// Tick positions (axis units) and labels.
    fn ticks(&self) -> Vec<(f64, String)> {
        match self.scale {
            Scale::Linear => linear_ticks(self.lo, self.hi, 5)
                .into_iter()
                .map(|t| (t, short(t)))
                .collect(),
            Scale::Log => (self.lo as i32..=self.hi as i32)
                .map(|e| (e as f64, short(10f64.powi(e))))
                .collect(),
            Scale::Percentile => (0..=self.hi as i32)
                .map(|e| {
                    // 0%, 90%, 99%, 99.9%, 99.99%, …
                    let label = match e {
                        0 => "0%".to_string(),
                        e => format!(
                            "{:.*}%",
                            (e - 2).max(0) as usize,
                            100.0 - 100.0 / 10f64.powi(e)
                        ),
                    };
                    (e as f64, label)
                })
                .collect(),
        }
    }
}

fn frame(o: &mut String, title: &str) {
    let _ = write!(
        o,
        r#"<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{}"><title>{}</title>"#,
        esc(title),
        esc(title)
    );
}

/// Horizontal grid lines with the y axis's tick labels.
fn y_grid(o: &mut String, y: &Axis) {
    let ph = H - T - B;
    for (t, label) in y.ticks() {
        let py = T + ph * (1.0 - (t - y.lo) / (y.hi - y.lo));
        let _ = write!(
            o,
            r#"<line class="grid" x1="{L}" x2="{}" y1="{py:.1}" y2="{py:.1}"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            W - R,
            L - 6.0,
            py + 4.0,
            esc(&label)
        );
    }
}

fn axes(o: &mut String, x: &Axis, y: &Axis, x_label: &str, y_label: &str) {
    let (pw, ph) = (W - L - R, H - T - B);
    y_grid(o, y);
    for (t, label) in x.ticks() {
        let px = L + pw * (t - x.lo) / (x.hi - x.lo);
        let _ = write!(
            o,
            r#"<line class="grid" x1="{px:.1}" x2="{px:.1}" y1="{T}" y2="{}"/><text class="tick" x="{px:.1}" y="{}" text-anchor="middle">{}</text>"#,
            T + ph,
            T + ph + 16.0,
            esc(&label)
        );
    }
    let _ = write!(
        o,
        r#"<line class="axis" x1="{L}" x2="{}" y1="{}" y2="{}"/><line class="axis" x1="{L}" x2="{L}" y1="{T}" y2="{}"/><text class="label" x="{}" y="{}" text-anchor="middle">{}</text><text class="label" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        W - R,
        T + ph,
        T + ph,
        T + ph,
        L + pw / 2.0,
        H - 8.0,
        esc(x_label),
        T + ph / 2.0,
        esc(y_label)
    );
}

/// `text` in at most `lines` lines of at most `fit` characters, broken at spaces
/// (a word longer than a line is cut); what does not fit ends in `…`.
pub(crate) fn wrap_label(text: &str, fit: usize, lines: usize) -> Vec<String> {
    let cut = |w: &str, n: usize| -> String {
        if w.chars().count() > n {
            format!(
                "{}…",
                w.chars().take(n.saturating_sub(1)).collect::<String>()
            )
        } else {
            w.to_string()
        }
    };
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        let need = cur.chars().count() + usize::from(!cur.is_empty()) + w.chars().count();
        if cur.is_empty() || need <= fit {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(w);
            continue;
        }
        out.push(cut(&cur, fit));
        cur = w.to_string();
        if out.len() + 1 == lines {
            // The last line takes the rest.
            for rest in words.by_ref() {
                cur.push(' ');
                cur.push_str(rest);
            }
        }
    }
    if !cur.is_empty() {
        out.push(cut(&cur, fit));
    }
    out
}

fn legend(o: &mut String, names: &[&str]) {
    let mut x = L + 8.0;
    // Each entry gets an equal share of the width when all of them would not fit.
    let room = W - L - R - 8.0;
    let natural: f64 = names
        .iter()
        .map(|n| 24.0 + n.chars().count() as f64 * 6.5)
        .sum();
    let share = room / names.len().max(1) as f64;
    for (i, full) in names.iter().enumerate() {
        let shown = if natural > room {
            wrap_label(full, (((share - 24.0) / 6.5) as usize).max(3), 1).remove(0)
        } else {
            full.to_string()
        };
        let n: &str = &shown;
        let _ = write!(
            o,
            r#"<rect class="s{} fill" x="{x:.1}" y="{}" width="10" height="10"/><text class="tick" x="{:.1}" y="{}">{}</text>"#,
            i % 8,
            T - 24.0,
            x + 14.0,
            T - 15.0,
            esc(n)
        );
        x += 24.0 + n.chars().count() as f64 * 6.5;
    }
}

/// Draws a line chart.
pub fn line_chart(c: &LineChart) -> String {
    let mut o = String::new();
    frame(&mut o, c.title);
    let xs = Axis::fit(
        c.x_scale,
        c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
    );
    let ys = Axis::fit(
        c.y_scale,
        c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
    );
    axes(&mut o, &xs, &ys, c.x_label, c.y_label);
    let (pw, ph) = (W - L - R, H - T - B);
    for (i, s) in c.series.iter().enumerate() {
        let pts: Vec<String> = s
            .points
            .iter()
            .filter_map(|&(x, y)| {
                let (fx, fy) = (xs.frac(x), ys.frac(y));
                (fx.is_finite() && fy.is_finite())
                    .then(|| format!("{:.1},{:.1}", L + pw * fx, T + ph * (1.0 - fy)))
            })
            .collect();
        if pts.len() == 1 {
            let (px, py) = pts[0].split_once(',').unwrap_or(("0", "0"));
            let _ = write!(
                o,
                r#"<circle class="s{} fill" cx="{px}" cy="{py}" r="3"/>"#,
                i % 8
            );
        } else if !pts.is_empty() {
            let _ = write!(
                o,
                r#"<polyline class="s{} line" points="{}"/>"#,
                i % 8,
                pts.join(" ")
            );
        }
    }
    let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
    legend(&mut o, &names);
    o.push_str("</svg>");
    o
}

/// One group of bars (a legend entry): a value and an optional ± error per category.
pub struct BarGroup {
    /// Legend label.
    pub name: String,
    /// Per category: (value, error half-width); `None` draws no bar.
    pub values: Vec<Option<(f64, f64)>>,
}

/// Draws grouped bars over `categories` with error bars.
pub fn bar_chart(title: &str, y_label: &str, categories: &[String], groups: &[BarGroup]) -> String {
    let mut o = String::new();
    frame(&mut o, title);
    let ys = Axis::fit(
        Scale::Linear,
        groups
            .iter()
            .flat_map(|g| g.values.iter().flatten().map(|(v, e)| v + e)),
    );
    let (pw, ph) = (W - L - R, H - T - B);
    // Y grid and labels only; categories are labelled under their bars.
    y_grid(&mut o, &ys);
    let n = categories.len().max(1) as f64;
    let slot = pw / n;
    let bw = (slot * 0.8 / groups.len().max(1) as f64).min(48.0);
    let y_of = |v: f64| T + ph * (1.0 - (v - ys.lo) / (ys.hi - ys.lo));
    for (ci, cat) in categories.iter().enumerate() {
        let x0 = L + slot * ci as f64 + (slot - bw * groups.len() as f64) / 2.0;
        for (gi, g) in groups.iter().enumerate() {
            if let Some(Some((v, e))) = g.values.get(ci) {
                let x = x0 + bw * gi as f64;
                let (top, base) = (y_of(*v), y_of(0.0));
                let _ = write!(
                    o,
                    r#"<rect class="s{} fill" x="{x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"><title>{}: {}</title></rect>"#,
                    gi % 8,
                    bw - 2.0,
                    (base - top).max(0.0),
                    esc(&g.name),
                    short(*v)
                );
                if *e > 0.0 {
                    let cx = x + (bw - 2.0) / 2.0;
                    let _ = write!(
                        o,
                        r#"<path class="err" d="M{cx:.1} {:.1}V{:.1}M{:.1} {:.1}h8M{:.1} {:.1}h8"/>"#,
                        y_of(v + e),
                        y_of((v - e).max(0.0)),
                        cx - 4.0,
                        y_of(v + e),
                        cx - 4.0,
                        y_of((v - e).max(0.0))
                    );
                }
            }
        }
        // The name in up to three lines under its slot, each as much as fits, so that
        // names sharing a long prefix stay apart; the whole name as a tooltip.
        let fit = ((slot / 7.0) as usize).max(3);
        let x = L + slot * (ci as f64 + 0.5);
        let _ = write!(
            o,
            r#"<text class="tick" x="{x:.1}" y="{}" text-anchor="middle"><title>{}</title>"#,
            T + ph + 16.0,
            esc(cat)
        );
        for (k, line) in wrap_label(cat, fit, 3).iter().enumerate() {
            let _ = write!(
                o,
                r#"<tspan x="{x:.1}" dy="{}">{}</tspan>"#,
                if k == 0 { 0 } else { 12 },
                esc(line)
            );
        }
        o.push_str("</text>");
    }
    let _ = write!(
        o,
        r#"<line class="axis" x1="{L}" x2="{}" y1="{:.1}" y2="{:.1}"/><text class="label" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        W - R,
        y_of(0.0),
        y_of(0.0),
        T + ph / 2.0,
        esc(y_label)
    );
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    legend(&mut o, &names);
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            linear_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(
            linear_ticks(0.0, 1.0, 5),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(short(12_500.0), "12.5k");
        assert_eq!(short(0.25), "0.25");
    }

    #[test]
    fn percentile_axis_puts_nines_at_equal_steps() {
        let wide = Axis::fit(Scale::Percentile, [0.0, 99.999].into_iter());
        let labels: Vec<String> = wide.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
        let a = Axis::fit(Scale::Percentile, [0.0, 99.9].into_iter());
        assert_eq!((a.lo, a.hi), (0.0, 3.0));
        assert!((a.frac(90.0) - 1.0 / 3.0).abs() < 1e-9);
        assert!((a.frac(99.0) - 2.0 / 3.0).abs() < 1e-9);
        let labels: Vec<String> = a.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%"]);
    }

    #[test]
    fn charts_draw_their_series() {
        let svg = line_chart(&LineChart {
            title: "t <1>",
            x_label: "s",
            y_label: "req/s",
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![Series {
                name: "a".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)],
            }],
        });
        assert!(svg.contains("<polyline class=\"s0 line\""));
        assert!(svg.contains("t &lt;1&gt;"));
        let bars = bar_chart(
            "b",
            "req/s",
            &["x".into(), "y".into()],
            &[BarGroup {
                name: "g".into(),
                values: vec![Some((10.0, 1.0)), None],
            }],
        );
        assert_eq!(
            bars.matches("<rect class=\"s0 fill\" x=").count(),
            2,
            "one bar and the legend"
        );
        assert!(bars.contains("class=\"err\""));
    }

    #[test]
    fn long_labels_wrap_apart_instead_of_running_together() {
        let a = wrap_label("backend ab -c100 -n300000", 12, 3);
        let b = wrap_label("backend ab -k -c100 -n300000", 12, 3);
        assert_eq!(a, ["backend ab", "-c100", "-n300000"]);
        assert_eq!(b, ["backend ab", "-k -c100", "-n300000"]);
        assert_ne!(a, b);
        assert_eq!(wrap_label("a-very-long-single-word", 8, 3), ["a-very-…"]);
        assert_eq!(
            wrap_label("one two three four five", 5, 2),
            ["one", "two …"]
        );
        assert!(wrap_label("x", 8, 3) == ["x"]);
    }
}
