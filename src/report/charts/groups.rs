//! The scenario-group charts: throughput bars with whiskers and the baseline's figure, and
//! latency percentiles as points on a log axis. A load scenario (S1) of a closed-loop compare is
//! set apart in both: its group shaded and named "load", with no baseline line. In a ceiling
//! compare every bar is a ceiling at the bound, S1's included (`docs/ceiling.md`).

use super::*;

/// The scenario groups of the throughput and latency charts: one group per scenario (named
/// under it), one slot per topology (coloured alike in both charts).
struct Groups<'r> {
    rows: Vec<&'r Row>,
    scenarios: Vec<String>,
    topologies: Vec<String>,
    labels: Vec<Vec<String>>,
}

impl<'r> Groups<'r> {
    fn of(report: &'r Report) -> Groups<'r> {
        let scenarios = distinct(report.rows.iter().map(|r| r.scenario.clone()));
        // Each label is wrapped to its group's width, centred, horizontal.
        let plot_w = WIDTH as i32 - LEGEND_W - MARGIN - Y_LABEL_W - 20;
        let label_w = (plot_w / scenarios.len().max(1) as i32 - 10).max(30);
        let shown = |s: &String| match is_load(report, s) {
            true => format!("{s} (load)"),
            false => s.clone(),
        };
        let labels = (scenarios.iter())
            .map(|s| wrap(&shown(s), label_w, LABEL_SIZE))
            .collect();
        Groups {
            rows: report.rows.iter().collect(),
            topologies: distinct(report.rows.iter().map(|r| r.topology.clone())),
            labels,
            scenarios,
        }
    }

    /// The groups of load scenarios, by index.
    fn loads(&self, report: &Report) -> Vec<usize> {
        (self.scenarios.iter().enumerate())
            .filter(|(_, s)| is_load(report, s))
            .map(|(i, _)| i)
            .collect()
    }

    /// A light band behind each load group, so a load never reads as one more run; `x(v)` is
    /// the pixel column of group boundary `v`.
    fn draw_load_bands(
        &self,
        root: &Root,
        (report, plot): (&Report, &PixelRect),
        x: impl Fn(f64) -> i32,
    ) -> Result<(), String> {
        for i in self.loads(report) {
            let (a, b) = (x(i as f64), x(i as f64 + 1.0));
            let band = Rectangle::new([(a, plot.y0), (b, plot.y1)], LOAD_BAND.mix(0.6).filled());
            drawn(root.draw(&band))?;
        }
        Ok(())
    }

    /// A legend entry per topology (`named`, its swatch as `marks` draws figures), then `more`,
    /// then the load band and the verdicts; after `notes`, one note on the figures degraded or invalid.
    fn layout(
        &self,
        (report, title, marks): (&Report, &str, Marks),
        named: impl Fn(&str) -> String,
        more: Vec<LegendEntry>,
        notes: Vec<String>,
    ) -> Layout {
        let swatch = |c: RGBColor| match marks {
            Marks::Bars => Swatch::Fill(c),
            Marks::Points => Swatch::Point(c, Verdict::Valid),
        };
        let mut legend: Vec<LegendEntry> = (self.topologies.iter().enumerate())
            .map(|(i, t)| entry(swatch(palette(i)), named(t)))
            .chain(more)
            .collect();
        if !self.loads(report).is_empty() {
            legend.push(entry(Swatch::Fill(LOAD_BAND), "load phase (shaded)"));
        }
        verdict_legend(&self.rows, marks, &mut legend);
        let notes: Vec<String> = (notes.into_iter())
            .chain(self.load_note(report, marks))
            .chain(row_notes(&self.rows, marks))
            .collect();
        let label_lines = self.labels.iter().map(Vec::len).max().unwrap_or(1).max(1) as i32;
        Layout {
            header: header(title, &crate::report::where_lines(report), report.standin()),
            notes: notes_lines(&notes),
            legend,
            x_label_h: 12 + label_lines * line_height(LABEL_SIZE) + 6,
        }
    }

    fn x_range(&self) -> std::ops::Range<f64> {
        0f64..self.scenarios.len().max(1) as f64
    }

    /// Row `r`'s slot: its topology's index and its left and right x, `pad` of the slot empty
    /// on each side.
    fn slot(&self, r: &Row, pad: f64) -> Option<(usize, f64, f64)> {
        let si = self.scenarios.iter().position(|s| *s == r.scenario)?;
        let ti = self.topologies.iter().position(|t| *t == r.topology)?;
        let slot = 0.8 / self.topologies.len().max(1) as f64;
        let x0 = si as f64 + 0.1 + slot * ti as f64 + slot * pad;
        Some((ti, x0, x0 + slot * (1.0 - 2.0 * pad)))
    }

    /// The scenario names under their groups; `cx(i)` is group `i`'s centre, pixels.
    fn draw_labels(
        &self,
        root: &Root,
        plot: &PixelRect,
        cx: impl Fn(f64) -> i32,
    ) -> Result<(), String> {
        for (si, lines) in self.labels.iter().enumerate() {
            let x = cx(si as f64 + 0.5);
            for (i, l) in lines.iter().enumerate() {
                let y = plot.y1 + 10 + i as i32 * line_height(LABEL_SIZE);
                text(root, l, LABEL_SIZE, (x, y), HPos::Center)?;
            }
        }
        Ok(())
    }

    /// What a load group is, when there is one: another measure than a run's (and, on the
    /// throughput bars, one with no ceiling).
    fn load_note(&self, report: &Report, marks: Marks) -> Option<String> {
        let names: Vec<&str> = (self.loads(report).into_iter())
            .map(|i| self.scenarios[i].as_str())
            .collect();
        let ceiling = match marks {
            Marks::Bars => ", and no ceiling is drawn over it",
            Marks::Points => "",
        };
        (!names.is_empty()).then(|| {
            format!(
                "{} (shaded): the load phase, inserts while the data were written; not comparable with the run phases beside it{ceiling}.",
                names.join(", ")
            )
        })
    }
}

/// The band behind a load scenario's group.
const LOAD_BAND: RGBColor = RGBColor(236, 236, 236);

/// Every measured row of `scenario` is a load phase whose throughput is not comparable with a
/// run's: a closed-loop load, never a load searched for its ceiling at the bound.
fn is_load(report: &Report, scenario: &str) -> bool {
    if report.ceiling.is_some() {
        return false;
    }
    let mut rows = report
        .rows
        .iter()
        .filter(|r| r.scenario == scenario && r.repeats > 0);
    rows.next().is_some_and(|r| r.load) && rows.all(|r| r.load)
}

/// The row differs significantly from the baseline (the table's `*`).
fn significant(r: &Row) -> bool {
    r.significance.is_some_and(|s| s.significant)
}

/// The baseline's row in `scenario`, if it was measured.
fn baseline_row<'r>(report: &'r Report, scenario: &str) -> Option<&'r Row> {
    (report.rows.iter())
        .find(|r| r.scenario == scenario && r.topology == report.baseline && r.repeats > 0)
}

/// Grouped bars: one group per scenario (named under it), one bar per topology (named in the
/// legend), min–max whiskers over repetitions, and the baseline's throughput as a dashed line
/// across each run group (the ceiling), left out where the baseline's figure is invalid and
/// over a load, which is shaded apart.
pub fn throughput(report: &Report) -> Result<Chart, ChartError> {
    let g = Groups::of(report);
    let measured = |r: &&Row| r.repeats > 0 && r.throughput.is_some();
    let top = (report.rows.iter().filter(measured))
        .map(|r| {
            r.spread
                .map_or(0.0, |s| s.1)
                .max(r.throughput.unwrap_or(0.0))
        })
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.12;
    let loads = g.loads(report);
    let runs: Vec<(usize, &String)> = g
        .scenarios
        .iter()
        .enumerate()
        .filter(|(i, _)| !loads.contains(i))
        .collect();
    let ceilings: Vec<(usize, f64)> = runs
        .iter()
        .filter_map(|&(i, s)| {
            let b = baseline_row(report, s)?;
            (b.validity.verdict != Verdict::Invalid).then_some((i, b.throughput?))
        })
        .collect();
    let (legend, notes) = throughput_key(report, (&g.scenarios, &runs), top, !ceilings.is_empty());
    let title = match &report.ceiling {
        Some(c) => format!("Ceilings by scenario and topology at {} (ops/s)", c.bounds),
        None => "Throughput by scenario and topology (ops/s)".to_string(),
    };
    let named = |t: &str| match t == report.baseline {
        true => format!("{t} (baseline)"),
        false => t.to_string(),
    };
    let layout = g.layout((report, &title, Marks::Bars), named, legend, notes);
    compose("throughput", &layout, |root, area| {
        let chart = axes(
            area,
            layout.x_label_h,
            (g.x_range(), 0f64..top),
            "operations per second",
            false,
        )?;
        let px = |x: f64, y: f64| chart.backend_coord(&(x, y));
        let plot = rect_of(chart.plotting_area().get_pixel_range());
        g.draw_load_bands(root, (report, &plot), |x| px(x, 0.0).0)?;
        for r in report.rows.iter().filter(measured) {
            let Some((ti, x0, x1)) = g.slot(r, 0.06) else {
                continue;
            };
            let (p0x, p0y) = px(x0, 0.0);
            let (p1x, p1y) = px(x1, r.throughput.unwrap_or(0.0));
            bar(root, (p0x, p1y, p1x, p0y), r.validity.verdict, palette(ti))?;
            let x = (p0x + p1x) / 2;
            let mut top_y = p1y;
            if let Some((lo, hi)) = r.spread.filter(|_| r.repeats >= 2) {
                whisker(root, (x, 6), (px(x0, lo).1, px(x0, hi).1), BLACK)?;
                top_y = top_y.min(px(x0, hi).1);
            }
            // The table's `*`, on the bar it belongs to.
            if significant(r) {
                text(root, "*", LABEL_SIZE + 2, (x, top_y - 20), HPos::Center)?;
            }
        }
        for (si, y) in &ceilings {
            let (a, py) = px(*si as f64 + 0.04, *y);
            let (b, _) = px(*si as f64 + 0.96, *y);
            let line = DashedPathElement::new(vec![(a, py), (b, py)], 8, 5, BLACK.stroke_width(2));
            drawn(root.draw(&line))?;
        }
        g.draw_labels(root, &plot, |x| px(x, 0.0).0)?;
        Ok(plot)
    })
}

/// The throughput chart's legend entries (after the topologies) and notes (before the rows');
/// `runs` are the scenarios that are not loads.
fn throughput_key(
    report: &Report,
    (scenarios, runs): (&[String], &[(usize, &String)]),
    top: f64,
    ceiling: bool,
) -> (Vec<LegendEntry>, Vec<String>) {
    let any_whisker = report
        .rows
        .iter()
        .any(|r| r.repeats >= 2 && r.spread.is_some());
    let mut legend = Vec::new();
    let (figure, base) = match &report.ceiling {
        Some(c) => (
            format!(
                "each cell's ceiling: the highest rate sustained with the intended latency within {}",
                c.bounds
            ),
            "ceiling",
        ),
        None => (
            "throughput (operations per second)".to_string(),
            "throughput",
        ),
    };
    let mut notes = vec![match (any_whisker, report.ceiling.is_some()) {
        (true, true) => format!(
            "Bars: {figure}, mean over whole searches; whiskers: the lowest and highest search."
        ),
        (true, false) => format!(
            "Bars: mean {figure} over the repetitions; whiskers: the lowest and highest repetition."
        ),
        (false, _) => format!("Bars: {figure} of each cell."),
    }];
    if ceiling {
        legend.push(entry(
            Swatch::Dashed,
            format!("{}'s {base}", report.baseline),
        ));
        notes.push(format!(
            "Dashed line: {}'s {base} in the same scenario, the figure the other topologies are compared with.",
            report.baseline
        ));
    }
    if any_whisker {
        let over = match report.ceiling.is_some() {
            true => "min–max of searches",
            false => "min–max of repetitions",
        };
        legend.push(entry(Swatch::Whisker, over));
    }
    if report.rows.iter().any(significant) {
        notes.push(format!(
            "*: significantly different from {} in the same scenario (Welch's t-test, p < 0.05), as in the table.",
            report.baseline
        ));
    }
    for (_, s) in runs {
        if baseline_row(report, s).is_some_and(|b| b.validity.verdict == Verdict::Invalid) {
            notes.push(format!(
                "No {} line for {s}: the baseline's figure is invalid.",
                report.baseline
            ));
        }
    }
    for s in scenarios {
        let most = (report.rows.iter())
            .filter(|r| r.scenario == *s && r.repeats > 0)
            .filter_map(|r| r.throughput)
            .fold(0.0, f64::max);
        if most > 0.0 && most < top * 0.02 {
            notes.push(format!(
                "{s}: at most {} ops/s, too small to read at this scale; the table has its figures.",
                human(most)
            ));
        }
    }
    (legend, notes)
}

/// Latency percentiles of the main operation on a log axis, as points: on a log axis a bar's
/// length depends on where the axis happens to start, a point's place does not. Per scenario
/// (named under its group) one slot per topology (coloured as in the
/// throughput chart): a dot at p50, drawn as its verdict says, and a stem to p99.9 with p95
/// (○), p99 (▲) and p99.9 (━) marked.
pub fn latency(report: &Report) -> Result<Chart, ChartError> {
    let g = Groups::of(report);
    let with_latency: Vec<(&Row, &Latency)> = (report.rows.iter())
        .filter(|r| r.repeats > 0)
        .filter_map(|r| Some((r, r.latency.as_ref()?)))
        .collect();
    let (lo, hi) = latency_range(&with_latency);
    let ops = distinct(with_latency.iter().filter_map(|(r, _)| r.main_op.clone()));
    let what = match ops.as_slice() {
        [one] => format!("{one} operations"),
        _ => "each row's main operation (named in the table)".to_string(),
    };
    let layout = g.layout(
        (report, "Latency percentiles of the main operation (log scale; the axis says µs, ms or s)", Marks::Points),
        |t| format!("{t}: dot at p50"),
        vec![entry(Swatch::Circle, "p95"), entry(Swatch::Triangle, "p99"), entry(Swatch::Tick, "p99.9")],
        vec![format!(
            "{}Latency of {what}, log scale: the dot is the median (p50), the stem reaches the 99.9th percentile; repetitions' histograms are added, so each percentile is that of all their operations. {}",
            match report.ceiling.is_some() {
                true => "Service latency at each cell's ceiling (from each operation's start); the bound holds on the intended latency, drawn in the ceiling charts. ",
                false => "",
            },
            LATENCY_FLOOR_RULE
        )],
    );
    compose("latency", &layout, |root, area| {
        let chart = axes(
            area,
            layout.x_label_h,
            (g.x_range(), (lo..hi).log_scale()),
            "latency (log scale)",
            true,
        )?;
        let px = |x: f64, y: f64| chart.backend_coord(&(x, y.clamp(lo, hi)));
        let plot = rect_of(chart.plotting_area().get_pixel_range());
        g.draw_load_bands(root, (report, &plot), |x| px(x, lo).0)?;
        let dense = f64::from(plot.y1 - plot.y0) / (hi / lo).log10().max(1.0) >= 70.0;
        for v in log_ticks(lo, hi, dense) {
            latency_tick(root, &plot, v, px(0.0, v).1)?;
        }
        for (r, l) in &with_latency {
            let Some((ti, x0, x1)) = g.slot(r, 0.12) else {
                continue;
            };
            let (p0x, p50) = px(x0, l.p50);
            let cx = (p0x + px(x1, lo).0) / 2;
            let ink = if r.validity.verdict == Verdict::Invalid {
                GREY
            } else {
                BLACK
            };
            let ys = [l.p95, l.p99, l.p999].map(|v| px(x0, v).1);
            percentiles(root, ink, cx, p50, ys)?;
            point(root, (cx, p50), r.validity.verdict, palette(ti))?;
        }
        g.draw_labels(root, &plot, |x| px(x, lo).0)?;
        Ok(plot)
    })
}

/// The latency axis's floor, in the words under the chart: one rule on every page, so the
/// axes of two pages differ only where their figures do.
const LATENCY_FLOOR_RULE: &str = "The axis starts at the power of ten at or below a third of the lowest p50 and ends above the highest p99.9.";

/// The latency axis's range ([`LATENCY_FLOOR_RULE`]): from the power of ten at or below a third
/// of the lowest p50 (room under the lowest dot) to 1.6 × the highest percentile drawn.
fn latency_range(with_latency: &[(&Row, &Latency)]) -> (f64, f64) {
    let lowest = (with_latency.iter())
        .map(|(_, l)| l.p50.max(1.0))
        .fold(f64::INFINITY, f64::min);
    let highest = (with_latency.iter())
        .map(|(_, l)| l.p999.max(l.p99).max(l.p50).max(1.0))
        .fold(10.0, f64::max);
    let lo = if lowest.is_finite() {
        10f64.powf((lowest / 3.0).log10().floor()).max(1.0)
    } else {
        1.0
    };
    (lo, (highest * 1.6).max(lo * 10.0))
}

/// A grid line, tick and label of the latency axis at `v` (pixel row `y`).
pub(super) fn latency_tick(root: &Root, plot: &PixelRect, v: f64, y: i32) -> Result<(), String> {
    let grid = RGBColor(225, 225, 225).stroke_width(1);
    drawn(root.draw(&PathElement::new(vec![(plot.x0, y), (plot.x1, y)], grid)))?;
    drawn(root.draw(&PathElement::new(
        vec![(plot.x0 - 5, y), (plot.x0, y)],
        BLACK.stroke_width(1),
    )))?;
    let style = style(TICK_SIZE, false, &BLACK, HPos::Right, VPos::Center);
    drawn(root.draw_text(&human_us(v), &style, (plot.x0 - 8, y)))
}

/// A point's stem from p50 up to p99.9 at column `cx` with p95 (○), p99 (▲) and p99.9 (━)
/// marked, narrow enough that crowded groups do not run together.
fn percentiles(
    root: &Root,
    ink: RGBColor,
    cx: i32,
    p50: i32,
    [y95, y99, y999]: [i32; 3],
) -> Result<(), String> {
    drawn(root.draw(&PathElement::new(
        vec![(cx, p50), (cx, y999.min(p50))],
        ink.stroke_width(2),
    )))?;
    drawn(root.draw(&Circle::new((cx, y95), 4, WHITE.filled())))?;
    drawn(root.draw(&Circle::new((cx, y95), 4, ink.stroke_width(2))))?;
    drawn(root.draw(&TriangleMarker::new((cx, y99), 5, ink.filled())))?;
    drawn(root.draw(&PathElement::new(
        vec![(cx - 7, y999), (cx + 7, y999)],
        ink.stroke_width(3),
    )))
}
