//! A cell's timeline as a person looks at it: operations per second over the run and failed
//! operations per second, the warm-up marked, member outages and server stalls shaded and named
//! (`docs/result-schema.md`, "Validity"). A reviewer sees a stall without reading JSON.
//!
//! Drawn with plotters' own label areas (axis labels outside the data area); the spans' names are
//! listed under the chart, never over the data.

use plotters::prelude::*;

use super::Report;
use super::charts::{Chart, ChartError, PixelRect, Root, WIDTH, canvas, human, rect_of, wrap};
use crate::experiment::model::CellFile;
use crate::measure::timeline::{Outage, Timeline};

const HEIGHT_PLOT: u32 = 420;
const LINE: u32 = 22;
const OPS: RGBColor = RGBColor(31, 119, 180);
const FAILED: RGBColor = RGBColor(200, 30, 30);
const OUTAGE: RGBColor = RGBColor(230, 60, 60);
const STALL: RGBColor = RGBColor(255, 160, 20);
const WARMUP: RGBColor = RGBColor(150, 150, 150);

/// One shaded span and the words under the chart that name it.
struct Span {
    from: f64,
    to: f64,
    color: RGBColor,
    label: String,
}

/// The spans of a timeline: warm-up, member outages, server stalls (a stall during an outage is
/// that outage's, as the verdict reads it).
fn spans(t: &Timeline, warmup_s: f64) -> Vec<Span> {
    let mut out = Vec::new();
    if warmup_s > 0.0 {
        out.push(Span {
            from: 0.0,
            to: warmup_s,
            color: WARMUP,
            label: format!("warm-up, left out of the figures: 0–{warmup_s:.1} s"),
        });
    }
    let span = |o: &Outage, color: RGBColor, what: String| Span {
        from: o.from_s,
        to: o.from_s + o.duration_s,
        color,
        label: format!(
            "{what}: {:.1}–{:.1} s{}",
            o.from_s,
            o.from_s + o.duration_s,
            if o.ongoing { " (until the end)" } else { "" }
        ),
    };
    for o in &t.member_outages {
        out.push(span(o, OUTAGE, format!("{} silent", o.subject)));
    }
    for s in t.server_stalls() {
        out.push(span(s, STALL, "server stall (members answered)".into()));
    }
    out
}

/// Points of a line: `(seconds into the run, per second)`.
type Points = Vec<(f64, f64)>;

/// A timeline shorter than this is one line of text, not a chart: a second or two of buckets
/// draws no line a reader can read.
pub const MIN_TIMELINE_S: f64 = 2.0;

/// A last bucket shorter than this is left out: its count over so short a span (ms-rounded
/// window, operations in flight at the stop) is no rate.
const MIN_PARTIAL_S: f64 = 0.25;

/// The lines of a timeline and what was left out of them.
#[derive(Default)]
struct Series {
    ops: Points,
    failed: Points,
    /// The last bucket's length when it was too short to draw as a rate, seconds.
    dropped_s: Option<f64>,
    /// The last bucket's length when it was drawn as a rate over that length, seconds.
    scaled_s: Option<f64>,
}

/// Where the timeline ends, seconds since its start: the warm-up and the measured window (the
/// watch's clock starts with the warm-up and stops with the window; `docs/engine.md`, "Runner",
/// `--warmup`), when the window is known.
fn end_s(cell: &CellFile) -> Option<f64> {
    let window_ms = cell.summary.runtime_ms;
    (window_ms > 0.0).then(|| cell.result.warmup_s + window_ms / 1000.0)
}

/// The line said instead of a timeline when the cell was too short for one (`None`: draw it):
/// it lasted its window, else its count of buckets.
pub fn too_short(cell: &CellFile, shown: &str) -> Option<String> {
    let lasted = end_s(cell).unwrap_or(cell.result.timeline.seconds.len() as f64);
    (lasted < MIN_TIMELINE_S).then(|| {
        format!(
            "{} on {shown} (repeat {}, {}) lasted {lasted:.1} s: too short for a timeline.",
            cell.cell.scenario, cell.cell.repeat, cell.summary.validity.verdict
        )
    })
}

/// Operations and failed operations per second of the timeline, each bucket as a rate over its
/// real length: the last one, cut by `maxexecutiontime` or the end of the work, is rarely a full
/// second, and drawn as one it reads as a collapse.
fn series(t: &Timeline, end: Option<f64>) -> Series {
    let mut out = Series::default();
    for s in &t.seconds {
        let from = f64::from(s.second);
        let len = end.map_or(1.0, |e| (e - from).clamp(0.0, 1.0));
        if len < MIN_PARTIAL_S {
            out.dropped_s = Some(len);
            continue;
        }
        if len < 0.999 {
            out.scaled_s = Some(len);
        }
        let at = from + len / 2.0;
        let rate =
            |m: &std::collections::BTreeMap<String, u64>| m.values().sum::<u64>() as f64 / len;
        out.ops.push((at, rate(&s.operations)));
        out.failed.push((at, rate(&s.errors)));
    }
    out
}

/// The timeline chart of one cell; `shown` is its topology's name.
pub fn timeline(cell: &CellFile, shown: &str) -> Result<Chart, ChartError> {
    let t = &cell.result.timeline;
    let spans = spans(t, cell.result.warmup_s);
    let end = end_s(cell);
    let lines = series(t, end);
    let notes = notes(cell, &spans, &lines);
    let height = HEIGHT_PLOT + LINE * (notes.len() as u32 + 1);
    canvas("timeline", height, |root| {
        let (top, bottom) = root.split_vertically(HEIGHT_PLOT);
        let area = draw_plot(&top, (cell, shown), &spans, &lines, end)?;
        draw_notes(&bottom, &notes)?;
        Ok(area)
    })
}

/// The plot of a timeline: its spans shaded, its lines, up to the window's `end` when known.
fn draw_plot(
    area: &Root,
    (cell, shown): (&CellFile, &str),
    spans: &[Span],
    lines: &Series,
    end: Option<f64>,
) -> Result<PixelRect, String> {
    let e = |x: DrawingAreaErrorKind<_>| x.to_string();
    let (ops, failed) = (&lines.ops, &lines.failed);
    let last = ops.last().map_or(1.0, |p| p.0 + 0.5);
    let end = end.unwrap_or(last).max(1.0);
    let top = ops.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let title = format!(
        "{} on {shown} (repeat {}): operations per second over the run",
        cell.cell.scenario, cell.cell.repeat
    );
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..end, 0.0..top)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("seconds into the run")
        .y_desc("operations per second")
        .y_label_formatter(&|v| human(*v))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(e)?;
    for s in spans {
        let shade = Rectangle::new(
            [(s.from, 0.0), (s.to.min(end), top)],
            s.color.mix(0.22).filled(),
        );
        chart.draw_series(std::iter::once(shade)).map_err(e)?;
    }
    for (points, color, width) in [(ops, OPS, 3), (failed, FAILED, 2)] {
        let line = LineSeries::new(points.iter().copied(), color.stroke_width(width));
        chart.draw_series(line).map_err(e)?;
    }
    Ok(rect_of(chart.plotting_area().get_pixel_range()))
}

/// The words under the chart: the legend, each span, the last partial second, and the verdict.
fn notes(cell: &CellFile, spans: &[Span], lines: &Series) -> Vec<(RGBColor, String)> {
    let mut out = vec![
        (
            OPS,
            "blue line: operations completed per second (every status)".to_string(),
        ),
        (FAILED, "red line: failed operations per second".to_string()),
    ];
    out.extend(
        spans
            .iter()
            .map(|s| (s.color, format!("shaded: {}", s.label))),
    );
    out.extend(partial_note(lines).map(|n| (BLACK, n)));
    let v = &cell.summary.validity;
    out.push((BLACK, format!("verdict: {}", v.verdict)));
    out.extend(
        v.reasons
            .iter()
            .map(|r| (BLACK, format!("– {}", r.message))),
    );
    if cell.summary.standin {
        out.push((
            RGBColor(170, 20, 20),
            "STAND-IN FIGURES — measured against microshard's stand-in server, not MongoDB".into(),
        ));
    }
    // Long reasons wrap within the canvas.
    let max = WIDTH as i32 - 96 - 24;
    out.into_iter()
        .flat_map(|(c, text)| wrap(&text, max, 16).into_iter().map(move |l| (c, l)))
        .collect()
}

/// How the last, partial second is drawn, when it was not a full second.
fn partial_note(lines: &Series) -> Option<String> {
    match (lines.dropped_s, lines.scaled_s) {
        (Some(d), _) => Some(format!(
            "the last {} of the run is left out: too short to give a rate",
            if d < 0.1 {
                format!("{:.0} ms", d * 1000.0)
            } else {
                format!("{d:.2} s")
            }
        )),
        (None, Some(s)) => Some(format!(
            "the last point is a rate over the run's last {s:.2} s, not over a full second"
        )),
        (None, None) => None,
    }
}

fn draw_notes(area: &Root, notes: &[(RGBColor, String)]) -> Result<(), String> {
    for (i, (color, text)) in notes.iter().enumerate() {
        let style = TextStyle::from(("sans-serif", 16).into_font()).color(color);
        area.draw_text(text, &style, (96, 6 + i as i32 * LINE as i32))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The cells in table order: scenario, then topology in the experiment's order, then
/// repetition, so a reader finds a cell's timeline where its row is. Cells of
/// a scenario or topology the report does not list come last, in their own order.
pub(crate) fn table_order<'a>(report: &Report, cells: &'a [CellFile]) -> Vec<&'a CellFile> {
    let scenarios = super::charts::distinct(report.rows.iter().map(|r| r.scenario.clone()));
    let rank = |c: &CellFile| {
        let s = scenarios.iter().position(|s| *s == c.cell.scenario);
        let t = (report.topologies.iter()).position(|t| t.given == c.cell.topology);
        (
            s.unwrap_or(usize::MAX),
            t.unwrap_or(usize::MAX),
            c.cell.repeat,
        )
    };
    let mut out: Vec<&CellFile> = cells.iter().collect();
    out.sort_by_key(|c| rank(c));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timeline::TimelineSecond;
    use crate::report::tests::{cell, config};

    /// A cell whose timeline holds these operation counts, one bucket a second, over a window of
    /// `window_ms`.
    fn timed(counts: &[u64], window_ms: f64) -> CellFile {
        let mut c = cell("single", "S4", 2, 25_000.0);
        c.summary.runtime_ms = window_ms;
        c.result.timeline.seconds = (0u32..)
            .zip(counts)
            .map(|(second, &n)| TimelineSecond {
                second,
                operations: [("READ".to_string(), n)].into(),
                ..Default::default()
            })
            .collect();
        c
    }

    #[test]
    fn a_last_sliver_of_a_second_is_left_out_not_drawn_as_a_collapse() {
        // 25,781, 25,463, 22,920, then 44 operations in the 2 ms after 3.0 s.
        let c = timed(&[25_781, 25_463, 22_920, 44], 3002.0);
        let lines = series(&c.result.timeline, end_s(&c));
        assert_eq!(lines.ops.len(), 3, "{:?}", lines.ops);
        assert!(lines.ops.iter().all(|p| p.1 > 20_000.0), "{:?}", lines.ops);
        let chart = timeline(&c, "single").expect("drawn");
        assert!(chart.svg.contains("the last 2 ms of the run is left out"));
    }

    #[test]
    fn a_last_part_second_is_a_rate_over_its_real_length() {
        let c = timed(&[1000, 1000, 500], 2500.0);
        let lines = series(&c.result.timeline, end_s(&c));
        assert_eq!(lines.ops.last(), Some(&(2.25, 1000.0)));
        assert_eq!(lines.scaled_s, Some(0.5));
        let chart = timeline(&c, "single").expect("drawn");
        assert!(chart.svg.contains("last 0.50 s, not over a full second"));
    }

    #[test]
    fn a_sub_two_second_cell_is_a_line_not_an_empty_chart() {
        let mut c = timed(&[6000], 400.0);
        c.cell.scenario = "S1".into();
        assert_eq!(
            too_short(&c, "single").as_deref(),
            Some("S1 on single (repeat 2, valid) lasted 0.4 s: too short for a timeline.")
        );
        assert_eq!(too_short(&timed(&[1, 1, 1], 3000.0), "single"), None);
    }

    #[test]
    fn timelines_come_in_table_order() {
        let cells = vec![
            cell("microshard-2", "S2", 1, 1.0),
            cell("single", "S2", 2, 1.0),
            cell("microshard-2", "S1", 2, 1.0),
            cell("single", "S1", 1, 1.0),
            cell("microshard-2", "S1", 1, 1.0),
            cell("single", "S2", 1, 1.0),
        ];
        let report = crate::report::build_from(&config(false), &cells);
        let order: Vec<String> = table_order(&report, &cells)
            .iter()
            .map(|c| format!("{} {} {}", c.cell.scenario, c.cell.topology, c.cell.repeat))
            .collect();
        assert_eq!(
            order,
            [
                "S1 single 1",
                "S1 microshard-2 1",
                "S1 microshard-2 2",
                "S2 single 1",
                "S2 single 2",
                "S2 microshard-2 1",
            ]
        );
    }
}
