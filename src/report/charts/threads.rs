//! The thread charts: a sweep's throughput by client threads with its peak and knee, and the
//! `sweep --vary` chart, one line per value; the sweep is the vary chart with one series.

use super::*;
use crate::experiment::model::CellSummary;

/// Throughput by client threads (log x axis) with every measured thread count labelled, the
/// peak and the knee marked and the knee rule written under the chart: the vary chart with one
/// series. `facts` names the topology's size and server when the sweep ran on a known topology;
/// `data` is the experiment's sizes (its `scale_note`).
pub fn sweep(
    sweep: &SweepFile,
    facts: Option<&TopologyFacts>,
    data: &str,
) -> Result<Chart, ChartError> {
    let series = sweep_line(sweep, "throughput (ops/s)", |s| s.throughput);
    let (peak, knee) = (
        mark_at(&series, sweep.max_threads),
        mark_at(&series, sweep.knee_threads),
    );
    let mut legend = Vec::new();
    if let Some((t, tp)) = peak {
        // A maximum at the last point tried is no peak: the curve may rise past it.
        let word = match sweep.points.last().is_some_and(|p| p.threads == t) {
            true => "maximum (last point tried)",
            false => "peak",
        };
        legend.push(entry(
            Swatch::Peak,
            format!("{word}: {t} threads, {} ops/s", human(tp)),
        ));
    }
    if let Some((t, tp)) = knee {
        legend.push(entry(
            Swatch::Knee,
            format!("knee: {t} threads, {} ops/s", human(tp)),
        ));
    }
    let notes = sweep_notes(sweep, peak, knee);
    let what = ("sweep", "Throughput", "operations per second");
    sweep_chart(
        (sweep, facts, data),
        what,
        &[series],
        (legend, &notes),
        (peak, knee),
    )
}

/// The sweep's latency beside its throughput: the main operation's median and 99th percentile
/// by client threads, in the unit the largest value reads best in, the knee's thread count ringed
/// on the p99 line, and the same "Where" and "Data" lines as the throughput chart.
pub fn sweep_latency(
    sweep: &SweepFile,
    facts: Option<&TopologyFacts>,
    data: &str,
) -> Result<Chart, ChartError> {
    let highest = (sweep.points.iter()).fold(0.0, |m: f64, p| m.max(p.summary.latency.p99));
    let (unit, per_unit) = latency_unit(highest);
    let series = [
        sweep_line(sweep, "p50 (median)", |s| s.latency.p50 / per_unit),
        sweep_line(sweep, "p99", |s| s.latency.p99 / per_unit),
    ];
    let knee = mark_at(&series[1], sweep.knee_threads);
    let legend =
        Vec::from_iter(knee.map(|(t, _)| entry(Swatch::Knee, format!("knee: {t} threads"))));
    let past = match crate::experiment::knee_caveats::measured_past_knee(sweep) {
        true => {
            "Past the knee, added threads mostly add waiting: latency climbs while throughput stays flat."
        }
        false => "Nothing was measured past the knee (it is the last point tried).",
    };
    let mut notes = vec![format!(
        "Lines: the main operation's latency at each thread count, in {unit}. {past}"
    )];
    notes.extend(point_notes(sweep));
    let y_name = format!("latency ({unit})");
    let what = ("sweep-latency", "Latency", y_name.as_str());
    sweep_chart(
        (sweep, facts, data),
        what,
        &series,
        (legend, &notes),
        (None, knee),
    )
}

/// A sweep chart: `series` (one colour each, in the legend before `legend`), each point marked
/// as its verdict says, `peak` and `knee` drawn on top; `what` is the chart's name, the title's
/// first word and the y axis's name.
fn sweep_chart(
    (sweep, facts, data): (&SweepFile, Option<&TopologyFacts>, &str),
    (name, what, y_name): (&str, &str, &str),
    series: &[VarySeries],
    (legend, notes): (Vec<LegendEntry>, &[String]),
    (peak, knee): (Mark, Mark),
) -> Result<Chart, ChartError> {
    let verdicts: Vec<Verdict> = sweep
        .points
        .iter()
        .map(|p| p.summary.validity.verdict)
        .collect();
    let mut entries: Vec<LegendEntry> = series
        .iter()
        .enumerate()
        .map(|(i, s)| entry(Swatch::Line(palette(i)), s.label.clone()))
        .chain(legend)
        .collect();
    entries.extend(invalid_entry(&verdicts));
    let title = format!("{what} by client threads: {}", sweep_label(sweep, facts));
    let header = header(&title, &sweep_where(sweep, facts, data), sweep.standin);
    let marks = |root: &Root, plot: &PixelRect, px: &dyn Fn(u32, f64) -> (i32, i32)| {
        peak_and_knee(root, plot, px, (peak, knee))
    };
    let layout = thread_layout(header, entries, notes);
    thread_chart((name, y_name), &layout, series, (1, &verdicts), marks)
}

/// A marked point of a sweep (peak or knee): threads and the value there.
type Mark = Option<(u32, f64)>;

/// One line of a sweep chart: `of` each point's figures, at its thread count (one run per
/// count, so no spread).
fn sweep_line(sweep: &SweepFile, label: &str, of: impl Fn(&CellSummary) -> f64) -> VarySeries {
    VarySeries {
        label: label.into(),
        points: (sweep.points.iter())
            .map(|p| {
                let v = of(&p.summary);
                (p.threads.max(1), v, v, v)
            })
            .collect(),
        worst: Verdict::Valid,
    }
}

/// The point of `series` at thread count `threads`, when there is one.
fn mark_at(series: &VarySeries, threads: Option<u32>) -> Mark {
    (series.points.iter())
        .find(|p| Some(p.0) == threads)
        .map(|p| (p.0, p.2))
}

/// The knee rule and every degraded or invalid point.
fn sweep_notes(sweep: &SweepFile, peak: Mark, knee: Mark) -> Vec<String> {
    let mut notes = vec![match (peak, knee) {
        (Some((p, ptp)), Some((k, _))) => format!(
            "Knee rule: the knee is the smallest thread count whose throughput is within {:.0}% of the maximum ({} ops/s at {p} threads), i.e. at least {} ops/s; here {k} threads.",
            sweep.tolerance * 100.0,
            human(ptp),
            human(ptp * (1.0 - sweep.tolerance))
        ),
        _ => "No usable points: no peak and no knee.".to_string(),
    }];
    // "still rising", "flat from", "interrupted": what the peak and knee cannot tell (#22).
    let caveats = crate::experiment::knee_caveats::caveats(sweep);
    notes.extend(caveats.iter().map(|c| crate::report::capitalised(c)));
    notes.extend(point_notes(sweep));
    notes
}

/// A line for every degraded or invalid point: its thread count, verdict, how it is drawn, and
/// why.
fn point_notes(sweep: &SweepFile) -> impl Iterator<Item = String> + '_ {
    (sweep.points.iter())
        .filter(|p| !p.summary.validity.is_valid())
        .map(|p| {
            let v = &p.summary.validity;
            let word = match v.verdict {
                Verdict::Invalid | Verdict::NotRun => "INVALID (grey ×, not a result)",
                _ => "DEGRADED (hollow point)",
            };
            format!("{} threads is {word}: {}", p.threads, v.summary())
        })
}

/// The legend's entry for the grey × of invalid points, when a point is invalid.
fn invalid_entry(verdicts: &[Verdict]) -> Option<LegendEntry> {
    (verdicts.contains(&Verdict::Invalid)).then(|| entry(Swatch::Invalid, "invalid point (grey ×)"))
}

/// The knee (green ring and rule) and the peak (red square and rule) of a sweep.
fn peak_and_knee(
    root: &Root,
    plot: &PixelRect,
    px: &dyn Fn(u32, f64) -> (i32, i32),
    (peak, knee): (Mark, Mark),
) -> Result<(), String> {
    if let Some((t, tp)) = knee {
        let (x, y) = px(t, tp);
        let rule =
            DashedPathElement::new(vec![(x, y), (x, plot.y1)], 6, 4, palette(2).stroke_width(2));
        drawn(root.draw(&rule))?;
        drawn(root.draw(&Circle::new((x, y), 9, palette(2).stroke_width(3))))?;
    }
    if let Some((t, tp)) = peak {
        let (x, y) = px(t, tp);
        let rule =
            DashedPathElement::new(vec![(x, y), (x, plot.y1)], 4, 4, DARK_RED.stroke_width(1));
        drawn(root.draw(&rule))?;
        drawn(root.draw(&Rectangle::new(
            [(x - 14, y - 14), (x + 14, y + 14)],
            DARK_RED.stroke_width(3),
        )))?;
    }
    Ok(())
}

/// The sweep charts' "Where", "Main operation" and "Data" lines.
fn sweep_where(sweep: &SweepFile, facts: Option<&TopologyFacts>, data: &str) -> Vec<String> {
    let version = (sweep.points.iter()).find_map(|p| p.summary.server_version.clone());
    let server = match facts {
        Some(f) => {
            let mut f = f.clone();
            f.server_version = f.server_version.or(version);
            f.standin |= sweep.standin;
            let size = f.size.clone().map(|s| format!("{s}, ")).unwrap_or_default();
            format!("{}: {size}{}", f.name, server_words(&f))
        }
        None => server_words(&TopologyFacts {
            server_version: version,
            standin: sweep.standin,
            ..TopologyFacts::default()
        }),
    };
    let op = (sweep.points.iter())
        .find_map(|p| (!p.summary.main_op.is_empty()).then(|| p.summary.main_op.clone()));
    let mut where_ = vec![format!("Where: {server}.")];
    where_.extend(
        op.map(|op| format!("Main operation: {op}; one run per thread count on the same data.")),
    );
    let mut seconds: Vec<f64> = (sweep.points.iter())
        .map(|p| p.summary.runtime_ms / 1000.0)
        .collect();
    seconds.sort_by(f64::total_cmp);
    let each = match seconds.get(seconds.len() / 2) {
        Some(s) if *s >= 10.0 => format!("; each point measured for {s:.0} s"),
        Some(s) => format!("; each point measured for {s:.1} s"),
        None => String::new(),
    };
    where_.push(format!("Data: {data}{each}."));
    where_
}

/// Rows of thread-count labels under a thread chart.
const TICK_ROWS: i32 = 2;

fn thread_layout(header: Vec<Line>, legend: Vec<LegendEntry>, notes: &[String]) -> Layout {
    Layout {
        header,
        notes: notes_lines(notes),
        legend,
        x_label_h: 12 + TICK_ROWS * line_height(TICK_SIZE) + line_height(LABEL_SIZE) + 8,
    }
}

/// Throughput by client threads on a log axis, one line per series (its mean, with min–max
/// whiskers when `repeats` > 1), every measured count labelled. With `verdicts` (one per point
/// of a single series) each point is marked as its verdict says; `marks` draws on top.
fn thread_chart<F>(
    (name, y_name): (&str, &str),
    layout: &Layout,
    series: &[VarySeries],
    (repeats, verdicts): (u32, &[Verdict]),
    marks: F,
) -> Result<Chart, ChartError>
where
    F: FnOnce(&Root, &PixelRect, &dyn Fn(u32, f64) -> (i32, i32)) -> Result<(), String>,
{
    let counts: std::collections::BTreeSet<u32> = (series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.0.max(1)))
        .collect();
    let xmin = f64::from(counts.first().copied().unwrap_or(1)) / 1.25;
    let xmax = f64::from(counts.last().copied().unwrap_or(2)).max(2.0) * 1.25;
    let ymax = (series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.3))
        .fold(1.0, f64::max)
        * 1.15;
    compose(name, layout, |root, area| {
        let ranges = ((xmin..xmax).log_scale(), 0f64..ymax);
        let chart = axes(area, layout.x_label_h, ranges, y_name, false)?;
        let plot = rect_of(chart.plotting_area().get_pixel_range());
        let px = |t: u32, y: f64| chart.backend_coord(&(f64::from(t.max(1)), y));
        // A light guide at every measured count, so each label sits under its point.
        for &t in &counts {
            let (x, _) = px(t, 0.0);
            let guide = PathElement::new(
                vec![(x, plot.y0), (x, plot.y1)],
                RGBColor(235, 235, 235).stroke_width(1),
            );
            drawn(root.draw(&guide))?;
        }
        let n = series.len().max(1) as i32;
        for (i, s) in series.iter().enumerate() {
            // Whiskers of several curves at one count are spread a little so none hides another.
            let shift = (i as i32 - (n - 1) / 2) * 4;
            series_line(
                root,
                s,
                palette(i),
                repeats,
                &|t, y| {
                    let (x, y) = px(t, y);
                    (x + shift, y)
                },
                verdicts,
            )?;
        }
        marks(root, &plot, &px)?;
        let xs: Vec<(u32, i32)> = counts.iter().map(|&t| (t, px(t, 0.0).0)).collect();
        thread_axis(root, &plot, &xs)?;
        Ok(plot)
    })
}

/// One series of a thread chart: its line, whiskers and points.
fn series_line(
    root: &Root,
    s: &VarySeries,
    color: RGBColor,
    repeats: u32,
    px: &dyn Fn(u32, f64) -> (i32, i32),
    verdicts: &[Verdict],
) -> Result<(), String> {
    let line: Vec<(i32, i32)> = s.points.iter().map(|p| px(p.0, p.2)).collect();
    drawn(root.draw(&PathElement::new(line.clone(), color.stroke_width(3))))?;
    for (j, (p, &(x, y))) in s.points.iter().zip(&line).enumerate() {
        if repeats > 1 && p.3 > p.1 {
            let (lo, hi) = (px(p.0, p.1).1, px(p.0, p.3).1);
            whisker(root, (x, 5), (lo, hi), color)?;
        }
        match verdicts.get(j) {
            None => drawn(root.draw(&Circle::new((x, y), 4, color.filled())))?,
            Some(Verdict::Invalid | Verdict::NotRun) => {
                drawn(root.draw(&Cross::new((x, y), 6, GREY.stroke_width(3))))?
            }
            Some(Verdict::Degraded) => {
                drawn(root.draw(&Circle::new((x, y), 5, WHITE.filled())))?;
                drawn(root.draw(&Circle::new((x, y), 5, color.stroke_width(2))))?;
            }
            Some(Verdict::Valid) => drawn(root.draw(&Circle::new((x, y), 5, color.filled())))?,
        }
    }
    Ok(())
}

/// The thread-count axis of the sweep charts: every measured count under its point (a label that
/// would touch its left neighbour goes to a second row) and the axis name below.
fn thread_axis(root: &Root, plot: &PixelRect, xs: &[(u32, i32)]) -> Result<(), String> {
    let mut row_right = [i32::MIN; 2];
    for &(t, x) in xs {
        let label = t.to_string();
        let w = text_width(&label, TICK_SIZE);
        let row = usize::from(x - w / 2 <= row_right[0] + 6);
        if row == 1 && x - w / 2 <= row_right[1] + 6 {
            continue;
        }
        row_right[row] = x + w / 2;
        x_tick(root, plot, (x, row as i32), &label)?;
    }
    let name = "client threads (log scale; every measured count labelled)";
    x_name(root, plot, TICK_ROWS, name)
}

/// One curve of a `sweep --vary` chart: a value of the varied property and, per thread count,
/// the lowest, mean and highest throughput over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct VarySeries {
    /// Legend label (`readbatchsize=10`).
    pub label: String,
    /// `(threads, min, mean, max)` ops/s, in thread order.
    pub points: Vec<(u32, f64, f64, f64)>,
    /// The worst verdict among the curve's points (the legend names it).
    pub worst: Verdict,
}

/// The seed-2 chart: throughput by client threads, one line per value of the varied property
/// (its mean over repetitions), with min–max whiskers when there are repetitions.
pub fn vary(
    title: &str,
    series: &[VarySeries],
    repeats: u32,
    server: &str,
    standin: bool,
    notes: &[String],
) -> Result<Chart, ChartError> {
    let mut legend: Vec<LegendEntry> = series
        .iter()
        .map(|s| match s.worst {
            Verdict::Valid => s.label.clone(),
            worst => format!("{} (some points {worst}: see the table)", s.label),
        })
        .enumerate()
        .map(|(i, label)| entry(Swatch::Line(palette(i)), label))
        .collect();
    let mut whiskers = "";
    if repeats > 1 {
        let label = format!("min–max of {repeats} repetitions");
        legend.push(entry(Swatch::Whisker, label));
        whiskers = "; whiskers: the lowest and highest repetition";
    }
    let mut all_notes = vec![format!(
        "Lines: mean throughput over {repeats} repetition(s) at each thread count{whiskers}."
    )];
    all_notes.extend(notes.iter().cloned());
    let header = header(title, &[format!("Where: {server}.")], standin);
    let layout = thread_layout(header, legend, &all_notes);
    let y_name = "operations per second";
    thread_chart(
        ("vary", y_name),
        &layout,
        series,
        (repeats, &[]),
        |_, _, _| Ok(()),
    )
}

/// A sweep's label with its topology named, not given by path (`S2 on single`).
pub(crate) fn sweep_label(sweep: &SweepFile, facts: Option<&TopologyFacts>) -> String {
    match facts {
        Some(f) if f.given != f.name => sweep.label.replace(&f.given, &f.name),
        _ => sweep.label.clone(),
    }
}
