//! Charts fit for a write-up (plotters, SVG): throughput by scenario and topology with min–max
//! whiskers and the baseline ceiling, latency percentiles on a log axis, and the thread-sweep
//! curve with its peak and knee.
//!
//! Every chart says what was measured and where in its title (server version, topology sizes,
//! data size) and says `stand-in` whenever the figures are. All text stays outside the data
//! area: scenario names under their group, the legend to the right, notes below. Invalid
//! figures are drawn hatched grey and never as normal bars; degraded ones are hatched in their
//! colour; both are named in the notes (the verdicts are `measure::validity`'s).

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use thiserror::Error;

use super::{Report, Row, TopologyFacts};
use crate::experiment::model::{Latency, SweepFile};
use crate::measure::validity::Verdict;

mod ceiling;
mod groups;
mod text;
mod threads;

pub(crate) use text::wrap;
use text::*;

pub use ceiling::ceiling;
pub use groups::{latency, throughput};
pub(crate) use threads::sweep_label;
pub use threads::{VarySeries, sweep, sweep_latency, vary};

/// A chart that could not be drawn.
#[derive(Debug, Error)]
#[error("chart {name}: {message}")]
pub struct ChartError {
    /// Which chart.
    pub name: String,
    /// What plotters said.
    pub message: String,
}

/// A rectangle in SVG pixels (y grows downwards), half-open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixelRect {
    /// Left edge.
    pub x0: i32,
    /// Top edge.
    pub y0: i32,
    /// Right edge.
    pub x1: i32,
    /// Bottom edge.
    pub y1: i32,
}

/// A drawn chart and where its data area lies, so that its layout can be checked (no text may
/// fall inside the data area) without looking at it.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The SVG document.
    pub svg: String,
    /// Canvas width, pixels.
    pub width: u32,
    /// Canvas height, pixels (grows with the notes).
    pub height: u32,
    /// The data area: bars, lines and markers are drawn here and no text is.
    pub plot_area: PixelRect,
}

/// Canvas width of every chart, pixels.
pub(crate) const WIDTH: u32 = 1100;
const MARGIN: i32 = 16;
const LEGEND_W: i32 = 270;
const PLOT_H: i32 = 380;
const Y_LABEL_W: i32 = 92;
const TITLE_SIZE: u32 = 24;
const SUB_SIZE: u32 = 16;
const LABEL_SIZE: u32 = 17;
const TICK_SIZE: u32 = 16;
const NOTE_SIZE: u32 = 15;

const GREY: RGBColor = RGBColor(120, 120, 120);
const DARK_RED: RGBColor = RGBColor(170, 20, 20);

fn palette(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
        RGBColor(188, 189, 34),
    ];
    COLORS[i % COLORS.len()]
}

/// A number as people write it on an axis: `950`, `1.5 k`, `100 k`, `1 M`, never `1000000.0`.
pub(crate) fn human(v: f64) -> String {
    let a = v.abs();
    let (scaled, unit) = if a >= 1e9 {
        (v / 1e9, " G")
    } else if a >= 1e6 {
        (v / 1e6, " M")
    } else if a >= 1e3 {
        (v / 1e3, " k")
    } else {
        (v, "")
    };
    let text = if scaled.abs() >= 100.0 || scaled.fract().abs() < 0.05 {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 10.0 || unit.is_empty() && scaled.abs() >= 1.0 {
        format!("{scaled:.1}")
    } else {
        format!("{scaled:.2}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{unit}")
}

/// A latency in microseconds as people write it: `250 µs`, `1.5 ms`, `2 s`.
pub(crate) fn human_us(us: f64) -> String {
    let (unit, per_unit) = latency_unit(us);
    format!("{} {unit}", human(us / per_unit))
}

/// The unit a latency of `us` microseconds reads best in, and its size in microseconds.
fn latency_unit(us: f64) -> (&'static str, f64) {
    if us >= 1e6 {
        ("s", 1e6)
    } else if us >= 1e3 {
        ("ms", 1e3)
    } else {
        ("µs", 1.0)
    }
}

pub(crate) type Root<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// How a legend entry's sample looks.
#[derive(Clone, Copy)]
enum Swatch {
    Fill(RGBColor),
    Degraded(RGBColor),
    Invalid,
    Dashed,
    Whisker,
    Line(RGBColor),
    /// A point drawn as its verdict says ([`point`]).
    Point(RGBColor, Verdict),
    Circle,
    Triangle,
    Tick,
    Peak,
    Knee,
    /// A ceiling step's mark: passed, or the rule it failed ([`ceiling::mark`]).
    Rule(Option<crate::experiment::ceiling::search::Rule>),
    /// The grey halo of a degraded ceiling step.
    Halo,
    /// A dotted line (a capacity model).
    Dotted,
}

struct LegendEntry {
    swatch: Swatch,
    label: String,
}

const SWATCH_W: i32 = 22;

fn legend_lines(entries: &[LegendEntry]) -> Vec<(Option<Swatch>, String)> {
    let mut out = Vec::new();
    for e in entries {
        for (i, l) in wrap(&e.label, LEGEND_W - SWATCH_W - 24, LABEL_SIZE)
            .into_iter()
            .enumerate()
        {
            out.push(((i == 0).then_some(e.swatch), l));
        }
    }
    out
}

fn legend_height(entries: &[LegendEntry]) -> i32 {
    legend_lines(entries).len() as i32 * (line_height(LABEL_SIZE) + 2) + 8
}

fn draw_legend(root: &Root, entries: &[LegendEntry], x: i32, y: i32) -> Result<(), String> {
    let step = line_height(LABEL_SIZE) + 2;
    for (i, (swatch, label)) in legend_lines(entries).iter().enumerate() {
        let top = y + i as i32 * step;
        let mid = top + step / 2 - 2;
        if let Some(s) = swatch {
            draw_swatch(root, *s, (x, mid - 7), (x + 16, mid + 7))?;
        }
        text(root, label, LABEL_SIZE, (x + SWATCH_W + 6, top), HPos::Left)?;
    }
    Ok(())
}

fn draw_swatch(
    root: &Root,
    s: Swatch,
    (x0, y0): (i32, i32),
    (x1, y1): (i32, i32),
) -> Result<(), String> {
    let mid = (y0 + y1) / 2;
    let cx = (x0 + x1) / 2;
    match s {
        Swatch::Fill(c) => drawn(root.draw(&Rectangle::new([(x0, y0), (x1, y1)], c.filled()))),
        Swatch::Degraded(c) => bar(root, (x0, y0, x1, y1), Verdict::Degraded, c),
        Swatch::Invalid => bar(root, (x0, y0, x1, y1), Verdict::Invalid, GREY),
        Swatch::Dashed => drawn(root.draw(&DashedPathElement::new(
            vec![(x0 - 2, mid), (x1 + 4, mid)],
            5,
            3,
            BLACK.stroke_width(2),
        ))),
        Swatch::Whisker => whisker(root, (cx, 6), (y0, y1), BLACK),
        Swatch::Line(c) => drawn(root.draw(&PathElement::new(
            vec![(x0 - 2, mid), (x1 + 4, mid)],
            c.stroke_width(3),
        ))),
        Swatch::Point(c, v) => point(root, (cx, mid), v, c),
        Swatch::Circle => drawn(root.draw(&Circle::new((cx, mid), 4, BLACK.stroke_width(2)))),
        Swatch::Triangle => drawn(root.draw(&TriangleMarker::new((cx, mid), 5, BLACK.filled()))),
        Swatch::Tick => drawn(root.draw(&PathElement::new(
            vec![(cx - 7, mid), (cx + 7, mid)],
            BLACK.stroke_width(3),
        ))),
        Swatch::Peak => drawn(root.draw(&Rectangle::new(
            [(cx - 7, mid - 7), (cx + 7, mid + 7)],
            DARK_RED.stroke_width(3),
        ))),
        Swatch::Knee => drawn(root.draw(&Circle::new((cx, mid), 6, palette(2).stroke_width(3)))),
        Swatch::Rule(r) => ceiling::mark(root, (cx, mid), r, BLACK),
        Swatch::Halo => {
            drawn(root.draw(&Circle::new((cx, mid), 8, RGBColor(200, 200, 200).filled())))
        }
        Swatch::Dotted => drawn(root.draw(&DashedPathElement::new(
            vec![(x0 - 2, mid), (x1 + 4, mid)],
            2,
            4,
            BLACK.stroke_width(2),
        ))),
    }
}

/// A bar in pixels, drawn as its verdict says: filled when valid, hatched in its colour when
/// degraded, hatched grey on white when invalid (never mistaken for a result).
fn bar(
    root: &Root,
    (x0, y0, x1, y1): (i32, i32, i32, i32),
    verdict: Verdict,
    color: RGBColor,
) -> Result<(), String> {
    let (top, bottom) = (y0.min(y1), y0.max(y1));
    let rect = [(x0, top), (x1, bottom)];
    match verdict {
        Verdict::Valid => drawn(root.draw(&Rectangle::new(rect, color.filled()))),
        Verdict::Degraded => {
            drawn(root.draw(&Rectangle::new(rect, color.mix(0.35).filled())))?;
            hatch(root, (x0, top, x1, bottom), 6, color)?;
            drawn(root.draw(&Rectangle::new(rect, color.stroke_width(2))))
        }
        Verdict::Invalid | Verdict::NotRun => {
            drawn(root.draw(&Rectangle::new(rect, WHITE.filled())))?;
            hatch(root, (x0, top, x1, bottom), 5, GREY)?;
            drawn(root.draw(&Rectangle::new(rect, GREY.stroke_width(2))))
        }
    }
}

/// 45° lines clipped to the rectangle.
fn hatch(
    root: &Root,
    (x0, y0, x1, y1): (i32, i32, i32, i32),
    spacing: i32,
    color: RGBColor,
) -> Result<(), String> {
    let (w, h) = (x1 - x0, y1 - y0);
    if w <= 0 || h <= 0 {
        return Ok(());
    }
    let mut c = -h;
    while c < w {
        // Points (x0 + c + t, y1 - t) for t in [0, h], kept where x0 <= x <= x1.
        let lo = 0.max(-c);
        let hi = h.min(w - c);
        if lo < hi {
            let path = vec![(x0 + c + lo, y1 - lo), (x0 + c + hi, y1 - hi)];
            drawn(root.draw(&PathElement::new(path, color.stroke_width(1))))?;
        }
        c += spacing;
    }
    Ok(())
}

/// A point drawn as its verdict says, as the thread charts draw theirs: a dot in its colour when
/// valid, a hollow ring when degraded, a grey × when invalid (never mistaken for a result).
fn point(root: &Root, (x, y): (i32, i32), verdict: Verdict, color: RGBColor) -> Result<(), String> {
    match verdict {
        Verdict::Valid => drawn(root.draw(&Circle::new((x, y), 6, color.filled()))),
        Verdict::Degraded => {
            drawn(root.draw(&Circle::new((x, y), 6, WHITE.filled())))?;
            drawn(root.draw(&Circle::new((x, y), 6, color.stroke_width(3))))
        }
        Verdict::Invalid | Verdict::NotRun => {
            drawn(root.draw(&Cross::new((x, y), 6, GREY.stroke_width(3))))
        }
    }
}

/// A min–max whisker at `x` with caps `cap` pixels to each side.
fn whisker(
    root: &Root,
    (x, cap): (i32, i32),
    (lo, hi): (i32, i32),
    ink: RGBColor,
) -> Result<(), String> {
    for path in [
        vec![(x, lo), (x, hi)],
        vec![(x - cap, lo), (x + cap, lo)],
        vec![(x - cap, hi), (x + cap, hi)],
    ] {
        drawn(root.draw(&PathElement::new(path, ink.stroke_width(2))))?;
    }
    Ok(())
}

/// A tick under the plot at pixel column `x`, labelled in tick row `row` (0 the first).
fn x_tick(root: &Root, plot: &PixelRect, (x, row): (i32, i32), label: &str) -> Result<(), String> {
    let tick = PathElement::new(vec![(x, plot.y1), (x, plot.y1 + 5)], BLACK.stroke_width(1));
    drawn(root.draw(&tick))?;
    let y = plot.y1 + 8 + row * line_height(TICK_SIZE);
    text(root, label, TICK_SIZE, (x, y), HPos::Center)
}

/// The x axis's name, centred under `rows` rows of tick labels.
fn x_name(root: &Root, plot: &PixelRect, rows: i32, name: &str) -> Result<(), String> {
    let y = plot.y1 + 12 + rows * line_height(TICK_SIZE);
    text(
        root,
        name,
        LABEL_SIZE,
        ((plot.x0 + plot.x1) / 2, y),
        HPos::Center,
    )
}

/// The heading lines: title, where it was measured, and the stand-in warning.
fn header(title: &str, where_: &[String], standin: bool) -> Vec<Line> {
    let bold = |text: String, size: u32, color: RGBColor| Line {
        bold: true,
        color,
        ..Line::plain(text, size)
    };
    let title = match standin {
        true => format!("{title} — stand-in figures, not MongoDB"),
        false => title.to_string(),
    };
    let mut paragraphs = vec![bold(title, TITLE_SIZE, BLACK)];
    paragraphs.extend(where_.iter().map(|w| Line::plain(w.clone(), SUB_SIZE)));
    if standin {
        let marker = super::STANDIN_MARKER;
        let words = format!("{marker}. Measured against microshard's stand-in server.");
        paragraphs.push(bold(words, SUB_SIZE, DARK_RED));
    }
    lines_of(&paragraphs, WIDTH as i32 - 2 * MARGIN)
}

/// The server of a topology in words: `MongoDB 7.0.0` or `stand-in 7.0.0-standin`.
pub(crate) fn server_words(facts: &TopologyFacts) -> String {
    match (&facts.server_version, facts.standin) {
        (Some(v), true) => format!("stand-in {v}"),
        (Some(v), false) => format!("MongoDB {v}"),
        (None, true) => "the stand-in".to_string(),
        (None, false) => "server version not recorded".to_string(),
    }
}

/// Fixed parts of a chart's page: header, plot box, legend and notes.
struct Layout {
    header: Vec<Line>,
    notes: Vec<Line>,
    legend: Vec<LegendEntry>,
    x_label_h: i32,
}

impl Layout {
    fn header_h(&self) -> i32 {
        block_height(&self.header) + 10
    }
    fn body_h(&self) -> i32 {
        (PLOT_H + self.x_label_h).max(legend_height(&self.legend))
    }
    fn height(&self) -> i32 {
        MARGIN + self.header_h() + self.body_h() + 12 + block_height(&self.notes) + MARGIN
    }
}

fn notes_lines(notes: &[String]) -> Vec<Line> {
    let paragraphs: Vec<Line> = notes
        .iter()
        .map(|n| Line::plain(n.clone(), NOTE_SIZE))
        .collect();
    lines_of(&paragraphs, WIDTH as i32 - 2 * MARGIN)
}

/// Draws header, legend and notes around a plot that `plot` draws into the area it is given.
fn compose<F>(name: &str, layout: &Layout, plot: F) -> Result<Chart, ChartError>
where
    F: FnOnce(&Root, &Root) -> Result<PixelRect, String>,
{
    canvas(name, layout.height().max(200) as u32, |root| {
        draw_lines(root, &layout.header, MARGIN, MARGIN)?;
        let body_top = MARGIN + layout.header_h();
        let plot_w = WIDTH as i32 - LEGEND_W - MARGIN;
        let area = root.clone().shrink(
            (MARGIN, body_top),
            (plot_w as u32, (PLOT_H + layout.x_label_h) as u32),
        );
        let plot_area = plot(root, &area)?;
        let legend_x = WIDTH as i32 - LEGEND_W + 8;
        draw_legend(root, &layout.legend, legend_x, body_top + 4)?;
        draw_lines(root, &layout.notes, MARGIN, body_top + layout.body_h() + 12)?;
        Ok(plot_area)
    })
}

/// A white canvas `height` pixels high that `draw` draws on; `draw` returns the data area.
pub(crate) fn canvas(
    name: &str,
    height: u32,
    draw: impl FnOnce(&Root) -> Result<PixelRect, String>,
) -> Result<Chart, ChartError> {
    let mut svg = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let fill = root.fill(&WHITE).map_err(|e| e.to_string());
        let area = fill.and_then(|()| draw(&root));
        area.and_then(|a| root.present().map(|()| a).map_err(|e| e.to_string()))
    };
    let plot_area = drawn.map_err(|message| ChartError {
        name: name.to_string(),
        message,
    })?;
    Ok(Chart {
        svg,
        width: WIDTH,
        height,
        plot_area,
    })
}

pub(crate) fn rect_of(range: (std::ops::Range<i32>, std::ops::Range<i32>)) -> PixelRect {
    PixelRect {
        x0: range.0.start,
        y0: range.1.start,
        x1: range.0.end,
        y1: range.1.end,
    }
}

/// The items in first-seen order, each once.
pub(crate) fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// How a chart draws the figures that are degraded or invalid: bars (hatched) or points (hollow, ×).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marks {
    Bars,
    Points,
}

/// The one note a group chart carries about figures that are degraded or invalid: how many and how they
/// are drawn, pointing to the page's one Validity list for which and why, so that the list is
/// said once per page, not under every chart.
fn row_notes(rows: &[&Row], marks: Marks) -> Vec<String> {
    let measured = rows.iter().filter(|r| r.repeats > 0).count();
    let count = |v: Verdict| {
        (rows.iter())
            .filter(|r| r.repeats > 0 && r.validity.verdict == v)
            .count()
    };
    let (degraded, invalid) = (count(Verdict::Degraded), count(Verdict::Invalid));
    let mut notes = Vec::new();
    if degraded + invalid > 0 {
        let (as_degraded, as_invalid) = match marks {
            Marks::Bars => ("hatched in their colour", "hatched grey"),
            Marks::Points => ("a hollow ring", "a grey ×"),
        };
        let parts: Vec<String> = [
            (degraded, "degraded", as_degraded),
            (invalid, "invalid", as_invalid),
        ]
        .iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, word, how)| format!("{n} {word}, drawn {how}"))
        .collect();
        notes.push(format!(
            "{} of {measured} figures are degraded or invalid ({}); the report's Validity list (report.html, report.md) says which and why.",
            degraded + invalid,
            parts.join("; ")
        ));
    }
    let missing = rows.len() - measured;
    if missing > 0 {
        notes.push(format!(
            "{missing} scenario–topology pairs have no figure (not measured or not run); the table says why."
        ));
    }
    notes
}

fn verdict_legend(rows: &[&Row], marks: Marks, legend: &mut Vec<LegendEntry>) {
    let any = |v: Verdict| {
        rows.iter()
            .any(|r| r.repeats > 0 && r.validity.verdict == v)
    };
    let swatch = |v: Verdict| match marks {
        Marks::Bars if v == Verdict::Invalid => Swatch::Invalid,
        Marks::Bars => Swatch::Degraded(GREY),
        Marks::Points => Swatch::Point(GREY, v),
    };
    if any(Verdict::Degraded) {
        legend.push(entry(swatch(Verdict::Degraded), "degraded: see Validity"));
    }
    if any(Verdict::Invalid) {
        legend.push(entry(swatch(Verdict::Invalid), "invalid: not a result"));
    }
}

fn entry(swatch: Swatch, label: impl Into<String>) -> LegendEntry {
    LegendEntry {
        swatch,
        label: label.into(),
    }
}

/// Plotters' error as the message a `ChartError` carries.
fn drawn<E: std::fmt::Display>(r: Result<(), E>) -> Result<(), String> {
    r.map_err(|e| e.to_string())
}

type Plot<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// The axes of every chart: y named `y_desc` with human numbers (or left to be labelled by
/// hand, `hand_y`, for the 1-2-5 steps of the latency log axis plotters does not give), no x
/// mesh, x positions labelled by hand under the plot (plotters' own would collide).
fn axes<'a, 'b, X, Y>(
    area: &'a Root<'b>,
    x_label_h: i32,
    (x, y): (X, Y),
    y_desc: &str,
    hand_y: bool,
) -> Result<Plot<'a, 'b, X::CoordDescType, Y::CoordDescType>, String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .margin_top(8)
        .margin_right(12)
        .x_label_area_size(x_label_h)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())?;
    let (y_ink, grid) = if hand_y {
        (TRANSPARENT, WHITE)
    } else {
        (BLACK.to_rgba(), RGBColor(225, 225, 225))
    };
    drawn(
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(if hand_y { 10 } else { 6 })
            .y_label_formatter(&|v| human(*v))
            .y_desc(y_desc)
            .label_style(("sans-serif", TICK_SIZE))
            .x_label_style(("sans-serif", TICK_SIZE).into_font().color(&TRANSPARENT))
            .y_label_style(("sans-serif", TICK_SIZE).into_font().color(&y_ink))
            .axis_desc_style(("sans-serif", LABEL_SIZE))
            .light_line_style(WHITE)
            .bold_line_style(grid)
            .draw(),
    )?;
    Ok(chart)
}

/// Tick values of a log axis: every power of ten in range, and 2× and 5× steps when there is
/// room (`dense`), so that a range within one or two decades still reads.
fn log_ticks(lo: f64, hi: f64, dense: bool) -> Vec<f64> {
    let steps: &[f64] = if dense { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for s in steps {
            let v = decade * s;
            if v >= lo * 0.999 && v <= hi * 1.001 {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::model::{CellSummary, SweepPoint};
    use crate::report::tests::{cell, config};

    #[test]
    fn human_numbers() {
        assert_eq!(human(1_000_000.0), "1 M");
        assert_eq!(human(100_000.0), "100 k");
        assert_eq!(human(1500.0), "1.5 k");
        assert_eq!(human(950.0), "950");
        assert_eq!(human(0.0), "0");
        assert_eq!(human(2.5), "2.5");
        assert_eq!(human(12_345.0), "12.3 k");
        assert_eq!(human_us(250.0), "250 µs");
        assert_eq!(human_us(1500.0), "1.5 ms");
        assert_eq!(human_us(2_000_000.0), "2 s");
    }

    #[test]
    fn log_ticks_step_1_2_5_when_there_is_room() {
        assert_eq!(
            log_ticks(1000.0, 70_000.0, true),
            vec![1e3, 2e3, 5e3, 1e4, 2e4, 5e4]
        );
        assert_eq!(
            log_ticks(10.0, 1e6, false),
            vec![1e1, 1e2, 1e3, 1e4, 1e5, 1e6]
        );
    }

    #[test]
    fn wrap_keeps_lines_narrow() {
        let long = "a sentence that is certainly far too long for a narrow column of text";
        let lines = wrap(long, 120, NOTE_SIZE);
        assert!(lines.len() > 2);
        assert!(
            lines.iter().all(|l| text_width(l, NOTE_SIZE) <= 120),
            "{lines:?}"
        );
        assert_eq!(lines.join(" "), long);
    }

    #[test]
    fn charts_are_svg_and_say_standin() {
        let mut c = cell("single", "S1", 1, 1000.0);
        c.summary.standin = true;
        let r =
            crate::report::build_from(&config(false), &[c, cell("microshard-2", "S1", 1, 1900.0)]);
        let svg = throughput(&r).map(|c| c.svg).unwrap_or_default();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.contains("stand-in"));
        assert!(svg.contains(">\nsingle&apos;s throughput\n</text>"));
        let svg = latency(&r).map(|c| c.svg).unwrap_or_default();
        assert!(svg.contains("<svg") && svg.contains("p99.9"));
        let plain = crate::report::build_from(&config(false), &[cell("single", "S1", 1, 1000.0)]);
        assert!(
            !throughput(&plain)
                .map(|c| c.svg)
                .unwrap_or_default()
                .contains("stand-in")
        );
    }

    #[test]
    fn a_significant_difference_is_marked_on_its_bar_as_in_the_table() {
        fn cells(topology: &str, tps: [f64; 3]) -> Vec<crate::experiment::model::CellFile> {
            (1..=3)
                .map(|i| cell(topology, "S2", i, tps[i as usize - 1]))
                .collect()
        }
        let mut all = cells("single", [1000.0, 1010.0, 990.0]);
        all.extend(cells("microshard-2", [1900.0, 1910.0, 1890.0]));
        all.extend(cells("microshard-4", [1005.0, 990.0, 1015.0]));
        let r = crate::report::build_from(&config(false), &all);
        let svg = throughput(&r).map(|c| c.svg).unwrap_or_default();
        // One star: microshard-2 differs, microshard-4 does not, the baseline is the reference.
        assert_eq!(svg.matches(">\n*\n</text>").count(), 1, "{svg}");
        assert!(svg.contains("significantly different from single"), "{svg}");
        let mut flat = cells("single", [1000.0, 1010.0, 990.0]);
        flat.extend(cells("microshard-4", [1005.0, 990.0, 1015.0]));
        let svg = throughput(&crate::report::build_from(&config(false), &flat))
            .map(|c| c.svg)
            .unwrap_or_default();
        assert!(!svg.contains(">\n*\n</text>") && !svg.contains("significantly"));
    }

    #[test]
    fn invalid_baseline_draws_no_ceiling_and_says_why() {
        let mut base = cell("single", "S1", 1, 1000.0);
        base.summary
            .validity
            .invalid("single stopped answering at 3.0 s");
        let r = crate::report::build_from(
            &config(false),
            &[base, cell("microshard-2", "S1", 1, 1900.0)],
        );
        let svg = throughput(&r).map(|c| c.svg).unwrap_or_default();
        assert!(
            !svg.contains(">\nsingle&apos;s throughput\n</text>"),
            "no ceiling legend"
        );
        assert!(svg.contains("No single line for S1"), "{svg}");
        // Why is said once, in the page's Validity list; the chart counts and points to it.
        assert!(!svg.contains("stopped answering"), "{svg}");
        assert!(
            svg.contains("1 of 2 figures are degraded or invalid (1 invalid, drawn hatched grey)"),
            "{svg}"
        );
    }

    #[test]
    fn sweep_title_names_the_topology_not_its_path() {
        let s = SweepFile {
            label: "S2 on /home/me/topologies/single.toml".into(),
            points: vec![],
            max_threads: None,
            knee_threads: None,
            tolerance: 0.05,
            standin: false,
            ..Default::default()
        };
        let facts = TopologyFacts {
            name: "single".into(),
            given: "/home/me/topologies/single.toml".into(),
            ..TopologyFacts::default()
        };
        assert_eq!(sweep_label(&s, Some(&facts)), "S2 on single");
        let svg = (sweep(&s, Some(&facts), "2000 records").map(|c| c.svg)).unwrap_or_default();
        assert!(
            svg.contains("S2 on single") && !svg.contains(".toml"),
            "{svg}"
        );
    }

    #[test]
    fn sweep_chart_marks_peak_knee_and_rule() {
        let points = [(1, 100.0), (2, 190.0), (4, 300.0), (8, 310.0)]
            .iter()
            .map(|&(t, tp)| SweepPoint {
                crosscheck: None,
                threads: t,
                summary: CellSummary {
                    throughput: tp,
                    runtime_ms: 3000.0,
                    latency: Latency {
                        p50: 400.0 * f64::from(t),
                        p99: 2500.0 * f64::from(t),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            })
            .collect();
        let s = SweepFile {
            label: "S2 on single".into(),
            points,
            max_threads: Some(8),
            knee_threads: Some(4),
            tolerance: 0.05,
            standin: false,
            ..Default::default()
        };
        let data = "2000 records (laptop scale)";
        let svg = sweep(&s, None, data).map(|c| c.svg).unwrap_or_default();
        let said = "Data: 2000 records (laptop scale); each point measured for 3.0 s.";
        assert!(svg.contains(said), "{svg}");
        assert!(svg.contains("knee: 4 threads"), "{svg}");
        // The maximum is the last point tried: no "peak", and the chart says the curve is flat
        // from its knee on rather than still rising.
        assert!(svg.contains("maximum (last point tried): 8"), "{svg}");
        assert!(!svg.contains("peak: 8 threads"), "{svg}");
        assert!(svg.contains("Flat from 4 threads on"), "{svg}");
        assert!(svg.contains("within 5% of the maximum"), "{svg}");
        for t in ["1", "2", "4", "8"] {
            assert!(
                svg.contains(&format!(">\n{t}\n</text>")),
                "thread label {t}"
            );
        }
    }

    #[test]
    fn sweep_latency_chart_draws_p50_and_p99_in_a_readable_unit_with_the_knee() {
        let point = |t: u32, p99_us: f64| SweepPoint {
            crosscheck: None,
            threads: t,
            summary: CellSummary {
                runtime_ms: 12_000.0,
                latency: Latency {
                    p50: p99_us / 4.0,
                    p99: p99_us,
                    ..Default::default()
                },
                ..Default::default()
            },
        };
        let mut s = SweepFile {
            label: "S5 on single".into(),
            points: vec![point(1, 900.0), point(4, 2_000.0), point(16, 30_000.0)],
            max_threads: Some(16),
            knee_threads: Some(4),
            tolerance: 0.05,
            standin: true,
            ..Default::default()
        };
        s.points[2].summary.validity.invalid("the client died");
        let svg = (sweep_latency(&s, None, "500 records").map(|c| c.svg)).unwrap_or_default();
        for said in [
            "invalid point (grey ×)",
            "16 threads is INVALID (grey ×, not a result): the client died",
            "Latency by client threads: S5 on single",
            "latency (ms)",
            "p50 (median)",
            "p99",
            "knee: 4 threads",
            "Data: 500 records; each point measured for 12 s.",
        ] {
            assert!(svg.contains(said), "{said}: {svg}");
        }
        assert!(svg.contains("stand-in figures, not MongoDB"), "{svg}");
    }
}
