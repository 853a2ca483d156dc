//! A cell's timeline as a person looks at it: operations per second over the run and failed
//! operations per second, the warm-up marked, member outages and server stalls shaded and named
//! (`docs/result-schema.md`, "Validity"). A reviewer sees a stall without reading JSON.
//!
//! Drawn with plotters' own label areas (axis labels outside the data area); the spans' names are
//! listed under the chart, never over the data.

use plotters::prelude::*;

use super::charts::{Chart, ChartError, PixelRect, WIDTH, human, wrap};
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

/// Operations and failed operations per second of the timeline.
fn series(t: &Timeline) -> (Points, Points) {
    let at = |s: u32| f64::from(s) + 0.5;
    let ops = t
        .seconds
        .iter()
        .map(|s| (at(s.second), s.operations.values().sum::<u64>() as f64))
        .collect();
    let failed = t
        .seconds
        .iter()
        .map(|s| (at(s.second), s.errors.values().sum::<u64>() as f64))
        .collect();
    (ops, failed)
}

/// The timeline chart of one cell; `shown` is its topology's name.
pub fn timeline(cell: &CellFile, shown: &str) -> Result<Chart, ChartError> {
    let err = |message: String| ChartError {
        name: "timeline".into(),
        message,
    };
    let t = &cell.result.timeline;
    let spans = spans(t, cell.result.warmup_s);
    let (ops, failed) = series(t);
    let notes = notes(cell, &spans);
    let height = HEIGHT_PLOT + LINE * (notes.len() as u32 + 1);
    let mut svg = String::new();
    let plot_area = {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let (top, bottom) = root.split_vertically(HEIGHT_PLOT);
        let area = draw_plot(&top, cell, shown, &spans, &ops, &failed).map_err(err)?;
        draw_notes(&bottom, &notes).map_err(err)?;
        root.present().map_err(|e| err(e.to_string()))?;
        area
    };
    Ok(Chart {
        svg,
        width: WIDTH,
        height,
        plot_area,
    })
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_plot(
    area: &Area,
    cell: &CellFile,
    shown: &str,
    spans: &[Span],
    ops: &[(f64, f64)],
    failed: &[(f64, f64)],
) -> Result<PixelRect, String> {
    let e = |x: DrawingAreaErrorKind<_>| x.to_string();
    let end = ops.last().map_or(1.0, |p| p.0 + 0.5).max(1.0);
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
    chart
        .draw_series(LineSeries::new(ops.iter().copied(), OPS.stroke_width(3)))
        .map_err(e)?;
    chart
        .draw_series(LineSeries::new(
            failed.iter().copied(),
            FAILED.stroke_width(2),
        ))
        .map_err(e)?;
    let (x, y) = chart.plotting_area().get_pixel_range();
    Ok(PixelRect {
        x0: x.start,
        y0: y.start,
        x1: x.end,
        y1: y.end,
    })
}

/// The words under the chart: the legend, each span, and the verdict.
fn notes(cell: &CellFile, spans: &[Span]) -> Vec<(RGBColor, String)> {
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

fn draw_notes(area: &Area, notes: &[(RGBColor, String)]) -> Result<(), String> {
    for (i, (color, text)) in notes.iter().enumerate() {
        let style = TextStyle::from(("sans-serif", 16).into_font()).color(color);
        area.draw_text(text, &style, (96, 6 + i as i32 * LINE as i32))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
