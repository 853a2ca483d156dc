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
    if us >= 1e6 {
        format!("{} s", human(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", human(us / 1e3))
    } else {
        format!("{} µs", human(us))
    }
}

/// Width of `text` in pixels at plotters font `size`: DejaVu Sans advances plus 4% (plotters
/// writes `font-size = size / 1.24` into the SVG), so that layout never underestimates; the
/// layout test measures the real fonts.
pub(crate) fn text_width(text: &str, size: u32) -> i32 {
    let px = f64::from(size) / 1.24;
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.28,
            'f' | 't' | '(' | ')' | '[' | ']' | '/' | '-' | ' ' => 0.39,
            'r' => 0.42,
            's' | 'z' | 'c' => 0.56,
            'k' | 'v' | 'x' | 'y' => 0.6,
            'm' => 0.98,
            'w' => 0.82,
            'M' => 0.87,
            'W' | '—' | '%' | '@' => 1.0,
            c if c.is_ascii_lowercase() => 0.64,
            c if c.is_ascii_digit() => 0.64,
            c if c.is_ascii_uppercase() => 0.78,
            _ => 0.84,
        })
        .sum();
    (em * px * 1.04).ceil() as i32
}

fn line_height(size: u32) -> i32 {
    // The font is size / 1.24 pixels high; leave room for descenders and a gap.
    (f64::from(size) * 1.05).ceil() as i32 + 4
}

/// Breaks `text` into lines no wider than `max_px` (words longer than a line are cut).
pub(crate) fn wrap(text: &str, max_px: i32, size: u32) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let candidate = if current.is_empty() {
            word.to_string()
        } else {
            format!("{current} {word}")
        };
        if text_width(&candidate, size) <= max_px {
            current = candidate;
            continue;
        }
        if !current.is_empty() {
            lines.push(std::mem::take(&mut current));
        }
        // Too long for a line of its own: break after hyphens first, then anywhere.
        let mut piece = String::new();
        let parts: Vec<String> = word.split_inclusive('-').map(str::to_string).collect();
        if parts.len() > 1 && parts.iter().all(|p| text_width(p, size) <= max_px) {
            for part in parts {
                let joined = format!("{piece}{part}");
                if text_width(&joined, size) > max_px && !piece.is_empty() {
                    lines.push(std::mem::take(&mut piece));
                    piece = part;
                } else {
                    piece = joined;
                }
            }
            current = piece;
            continue;
        }
        for ch in word.chars() {
            let mut next = piece.clone();
            next.push(ch);
            if text_width(&next, size) > max_px && !piece.is_empty() {
                lines.push(std::mem::take(&mut piece));
                next = ch.to_string();
            }
            piece = next;
        }
        current = piece;
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// One line of text the layout places: words, size, weight and colour.
#[derive(Clone)]
struct Line {
    text: String,
    size: u32,
    bold: bool,
    color: RGBColor,
}

impl Line {
    fn plain(text: String, size: u32) -> Line {
        Line {
            text,
            size,
            bold: false,
            color: BLACK,
        }
    }
}

/// Wraps paragraphs into lines of at most `max_px`.
fn lines_of(paragraphs: &[Line], max_px: i32) -> Vec<Line> {
    paragraphs
        .iter()
        .flat_map(|p| {
            wrap(&p.text, max_px, p.size)
                .into_iter()
                .map(|text| Line { text, ..p.clone() })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn block_height(lines: &[Line]) -> i32 {
    lines.iter().map(|l| line_height(l.size)).sum()
}

type Root<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn style(size: u32, bold: bool, color: &RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    let font = if bold {
        ("sans-serif", size).into_font().style(FontStyle::Bold)
    } else {
        ("sans-serif", size).into_font()
    };
    let mut s = TextStyle::from(font).pos(Pos::new(h, v));
    s.color = color.to_backend_color();
    s
}

fn text(root: &Root, s: &str, size: u32, (x, y): (i32, i32), h: HPos) -> Result<(), String> {
    root.draw_text(s, &style(size, false, &BLACK, h, VPos::Top), (x, y))
        .map_err(|e| e.to_string())
}

/// Draws lines top-down from `(x, y)`; returns the y below the last one.
fn draw_lines(root: &Root, lines: &[Line], x: i32, mut y: i32) -> Result<i32, String> {
    for l in lines {
        root.draw_text(
            &l.text,
            &style(l.size, l.bold, &l.color, HPos::Left, VPos::Top),
            (x, y),
        )
        .map_err(|e| e.to_string())?;
        y += line_height(l.size);
    }
    Ok(y)
}

/// How a legend entry's sample looks.
#[derive(Clone, Copy)]
enum Swatch {
    Fill(RGBColor),
    Degraded(RGBColor),
    Invalid,
    Dashed,
    Whisker,
    Line(RGBColor),
    Circle,
    Triangle,
    Tick,
    Peak,
    Knee,
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
    let e = |r: Result<(), DrawingAreaErrorKind<_>>| r.map_err(|e| e.to_string());
    let mid = (y0 + y1) / 2;
    let cx = (x0 + x1) / 2;
    match s {
        Swatch::Fill(c) => e(root.draw(&Rectangle::new([(x0, y0), (x1, y1)], c.filled()))),
        Swatch::Degraded(c) => bar(root, (x0, y0, x1, y1), Verdict::Degraded, c),
        Swatch::Invalid => bar(root, (x0, y0, x1, y1), Verdict::Invalid, GREY),
        Swatch::Dashed => e(root.draw(&DashedPathElement::new(
            vec![(x0 - 2, mid), (x1 + 4, mid)],
            5,
            3,
            BLACK.stroke_width(2),
        ))),
        Swatch::Whisker => whisker(root, cx, y0, y1),
        Swatch::Line(c) => e(root.draw(&PathElement::new(
            vec![(x0 - 2, mid), (x1 + 4, mid)],
            c.stroke_width(3),
        ))),
        Swatch::Circle => e(root.draw(&Circle::new((cx, mid), 4, BLACK.stroke_width(2)))),
        Swatch::Triangle => e(root.draw(&TriangleMarker::new((cx, mid), 5, BLACK.filled()))),
        Swatch::Tick => e(root.draw(&PathElement::new(
            vec![(cx - 7, mid), (cx + 7, mid)],
            BLACK.stroke_width(3),
        ))),
        Swatch::Peak => e(root.draw(&Rectangle::new(
            [(cx - 7, mid - 7), (cx + 7, mid + 7)],
            DARK_RED.stroke_width(3),
        ))),
        Swatch::Knee => e(root.draw(&Circle::new((cx, mid), 6, palette(2).stroke_width(3)))),
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
    let e = |r: Result<(), DrawingAreaErrorKind<_>>| r.map_err(|e| e.to_string());
    let (top, bottom) = (y0.min(y1), y0.max(y1));
    let rect = [(x0, top), (x1, bottom)];
    match verdict {
        Verdict::Valid => e(root.draw(&Rectangle::new(rect, color.filled()))),
        Verdict::Degraded => {
            e(root.draw(&Rectangle::new(rect, color.mix(0.35).filled())))?;
            hatch(root, (x0, top, x1, bottom), 6, color)?;
            e(root.draw(&Rectangle::new(rect, color.stroke_width(2))))
        }
        Verdict::Invalid => {
            e(root.draw(&Rectangle::new(rect, WHITE.filled())))?;
            hatch(root, (x0, top, x1, bottom), 5, GREY)?;
            e(root.draw(&Rectangle::new(rect, GREY.stroke_width(2))))
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
            root.draw(&PathElement::new(
                vec![(x0 + c + lo, y1 - lo), (x0 + c + hi, y1 - hi)],
                color.stroke_width(1),
            ))
            .map_err(|e| e.to_string())?;
        }
        c += spacing;
    }
    Ok(())
}

/// A min–max whisker with caps.
fn whisker(root: &Root, x: i32, y_low: i32, y_high: i32) -> Result<(), String> {
    let style = BLACK.stroke_width(2);
    for path in [
        vec![(x, y_low), (x, y_high)],
        vec![(x - 6, y_low), (x + 6, y_low)],
        vec![(x - 6, y_high), (x + 6, y_high)],
    ] {
        root.draw(&PathElement::new(path, style))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The heading lines: title, where it was measured, and the stand-in warning.
fn header(title: &str, where_: &[String], standin: bool) -> Vec<Line> {
    let mut paragraphs = vec![Line {
        text: if standin {
            format!("{title} — stand-in figures, not MongoDB")
        } else {
            title.to_string()
        },
        size: TITLE_SIZE,
        bold: true,
        color: BLACK,
    }];
    paragraphs.extend(where_.iter().map(|w| Line::plain(w.clone(), SUB_SIZE)));
    if standin {
        paragraphs.push(Line {
            text: format!(
                "{}. Measured against microshard's stand-in server.",
                super::STANDIN_MARKER
            ),
            size: SUB_SIZE,
            bold: true,
            color: DARK_RED,
        });
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
    let height = layout.height().max(200) as u32;
    let mut svg = String::new();
    let plot_area = {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let fail = |message: String| ChartError {
            name: name.to_string(),
            message,
        };
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        draw_lines(&root, &layout.header, MARGIN, MARGIN).map_err(fail)?;
        let body_top = MARGIN + layout.header_h();
        let plot_w = WIDTH as i32 - LEGEND_W - MARGIN;
        let area = root.clone().shrink(
            (MARGIN, body_top),
            (plot_w as u32, (PLOT_H + layout.x_label_h) as u32),
        );
        let plot_area = plot(&root, &area).map_err(fail)?;
        draw_legend(
            &root,
            &layout.legend,
            WIDTH as i32 - LEGEND_W + 8,
            body_top + 4,
        )
        .map_err(fail)?;
        draw_lines(
            &root,
            &layout.notes,
            MARGIN,
            body_top + layout.body_h() + 12,
        )
        .map_err(fail)?;
        root.present().map_err(|e| fail(e.to_string()))?;
        plot_area
    };
    Ok(Chart {
        svg,
        width: WIDTH,
        height,
        plot_area,
    })
}

fn rect_of(range: (std::ops::Range<i32>, std::ops::Range<i32>)) -> PixelRect {
    PixelRect {
        x0: range.0.start,
        y0: range.1.start,
        x1: range.0.end,
        y1: range.1.end,
    }
}

/// Group labels under the plot: each wrapped to its group's width, centred, horizontal.
fn group_labels(names: &[String], group_px: i32) -> Vec<Vec<String>> {
    names
        .iter()
        .map(|n| wrap(n, (group_px - 10).max(30), LABEL_SIZE))
        .collect()
}

fn group_label_height(labels: &[Vec<String>]) -> i32 {
    let lines = labels.iter().map(Vec::len).max().unwrap_or(1).max(1) as i32;
    12 + lines * line_height(LABEL_SIZE) + 6
}

fn approx_group_px(groups: usize) -> i32 {
    (WIDTH as i32 - LEGEND_W - MARGIN - Y_LABEL_W - 20) / groups.max(1) as i32
}

/// The items in first-seen order, each once.
pub(crate) fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Valid => "valid",
        Verdict::Degraded => "DEGRADED (hatched in its colour)",
        Verdict::Invalid => "INVALID (hatched grey, not a result)",
    }
}

/// Notes naming every row that is not valid or not measured.
fn row_notes(rows: &[&Row]) -> Vec<String> {
    let mut notes = Vec::new();
    for r in rows {
        if let (0, Some(why)) = (r.repeats, &r.not_run) {
            notes.push(format!("{} on {}: {why}.", r.scenario, r.topology));
        } else if r.repeats == 0 {
            notes.push(format!("{} on {}: not measured.", r.scenario, r.topology));
        } else if !r.validity.is_valid() {
            let why = r.validity.summary();
            notes.push(format!(
                "{} on {} is {}{}",
                r.scenario,
                r.topology,
                verdict_word(r.validity.verdict),
                if why.is_empty() {
                    ".".to_string()
                } else {
                    format!(": {why}")
                }
            ));
        }
    }
    notes
}

fn verdict_legend(rows: &[&Row], legend: &mut Vec<LegendEntry>) {
    let any = |v: Verdict| {
        rows.iter()
            .any(|r| r.repeats > 0 && r.validity.verdict == v)
    };
    if any(Verdict::Degraded) {
        legend.push(entry(Swatch::Degraded(GREY), "degraded: see notes"));
    }
    if any(Verdict::Invalid) {
        legend.push(entry(Swatch::Invalid, "invalid: not a result"));
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
        Groups {
            rows: report.rows.iter().collect(),
            topologies: distinct(report.rows.iter().map(|r| r.topology.clone())),
            labels: group_labels(&scenarios, approx_group_px(scenarios.len())),
            scenarios,
        }
    }

    /// A legend entry per topology (`named`), then `more`, then the verdicts; the notes name
    /// every row that is not valid after `notes`.
    fn layout(
        &self,
        (report, title): (&Report, &str),
        named: impl Fn(&str) -> String,
        more: Vec<LegendEntry>,
        notes: Vec<String>,
    ) -> Layout {
        let mut legend: Vec<LegendEntry> = (self.topologies.iter().enumerate())
            .map(|(i, t)| entry(Swatch::Fill(palette(i)), named(t)))
            .chain(more)
            .collect();
        verdict_legend(&self.rows, &mut legend);
        let notes: Vec<String> = notes.into_iter().chain(row_notes(&self.rows)).collect();
        Layout {
            header: header(title, &super::where_lines(report), report.standin()),
            notes: notes_lines(&notes),
            legend,
            x_label_h: group_label_height(&self.labels),
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
}

/// The baseline's row in `scenario`, if it was measured.
fn baseline_row<'r>(report: &'r Report, scenario: &str) -> Option<&'r Row> {
    (report.rows.iter())
        .find(|r| r.scenario == scenario && r.topology == report.baseline && r.repeats > 0)
}

/// Grouped bars: one group per scenario (named under it), one bar per topology (named in the
/// legend), min–max whiskers over repetitions, and the baseline's throughput as a dashed line
/// across each group (the ceiling), left out where the baseline's figure is invalid.
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
    let ceilings: Vec<(usize, f64)> = (g.scenarios.iter().enumerate())
        .filter_map(|(i, s)| {
            let b = baseline_row(report, s)?;
            (b.validity.verdict != Verdict::Invalid).then_some((i, b.throughput?))
        })
        .collect();
    let (legend, notes) = throughput_key(report, &g.scenarios, top, !ceilings.is_empty());
    let title = "Throughput by scenario and topology (ops/s)";
    let named = |t: &str| match t == report.baseline {
        true => format!("{t} (baseline)"),
        false => t.to_string(),
    };
    let layout = g.layout((report, title), named, legend, notes);
    compose("throughput", &layout, |root, area| {
        let chart = axes(
            area,
            layout.x_label_h,
            (g.x_range(), 0f64..top),
            "operations per second",
            false,
        )?;
        let px = |x: f64, y: f64| chart.backend_coord(&(x, y));
        for r in report.rows.iter().filter(measured) {
            let Some((ti, x0, x1)) = g.slot(r, 0.06) else {
                continue;
            };
            let (p0x, p0y) = px(x0, 0.0);
            let (p1x, p1y) = px(x1, r.throughput.unwrap_or(0.0));
            bar(root, (p0x, p1y, p1x, p0y), r.validity.verdict, palette(ti))?;
            if let Some((lo, hi)) = r.spread.filter(|_| r.repeats >= 2) {
                whisker(root, (p0x + p1x) / 2, px(x0, lo).1, px(x0, hi).1)?;
            }
        }
        for (si, y) in &ceilings {
            let (a, py) = px(*si as f64 + 0.04, *y);
            let (b, _) = px(*si as f64 + 0.96, *y);
            let line = DashedPathElement::new(vec![(a, py), (b, py)], 8, 5, BLACK.stroke_width(2));
            drawn(root.draw(&line))?;
        }
        let plot = rect_of(chart.plotting_area().get_pixel_range());
        g.draw_labels(root, &plot, |x| px(x, 0.0).0)?;
        Ok(plot)
    })
}

/// The throughput chart's legend entries (after the topologies) and notes (before the rows').
fn throughput_key(
    report: &Report,
    scenarios: &[String],
    top: f64,
    ceiling: bool,
) -> (Vec<LegendEntry>, Vec<String>) {
    let any_whisker = report
        .rows
        .iter()
        .any(|r| r.repeats >= 2 && r.spread.is_some());
    let mut legend = Vec::new();
    let mut notes = vec![if any_whisker {
        "Bars: mean throughput (operations per second) over the repetitions; whiskers: the lowest and highest repetition.".to_string()
    } else {
        "Bars: throughput (operations per second) of each cell.".to_string()
    }];
    if ceiling {
        legend.push(entry(
            Swatch::Dashed,
            format!("{} ceiling", report.baseline),
        ));
        notes.push(format!(
            "Dashed line: {}'s throughput in the same scenario, the ceiling the other topologies are compared with.",
            report.baseline
        ));
    }
    if any_whisker {
        legend.push(entry(Swatch::Whisker, "min–max of repetitions"));
    }
    for s in scenarios {
        if baseline_row(report, s).is_some_and(|b| b.validity.verdict == Verdict::Invalid) {
            notes.push(format!(
                "No {} ceiling for {s}: the baseline's figure is invalid.",
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

/// Latency percentiles of the main operation on a log axis: per scenario (named under its
/// group) one slot per topology (coloured as in the throughput chart), a bar up to p50 and a
/// stem to p99.9 with p95 (○), p99 (▲) and p99.9 (━) marked.
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
        (report, "Latency percentiles of the main operation (log scale; the axis says µs, ms or s)"),
        |t| format!("{t}: bar to p50"),
        vec![entry(Swatch::Circle, "p95"), entry(Swatch::Triangle, "p99"), entry(Swatch::Tick, "p99.9")],
        vec![format!(
            "Latency of {what}, log scale: the bar reaches the median (p50), the stem the 99.9th percentile; repetitions' histograms are added, so each percentile is that of all their operations."
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
        let dense = f64::from(plot.y1 - plot.y0) / (hi / lo).log10().max(1.0) >= 70.0;
        for v in log_ticks(lo, hi, dense) {
            latency_tick(root, &plot, v, px(0.0, v).1)?;
        }
        for (r, l) in &with_latency {
            let Some((ti, x0, x1)) = g.slot(r, 0.12) else {
                continue;
            };
            let (p0x, base) = px(x0, lo);
            let (p1x, p50) = px(x1, l.p50);
            bar(root, (p0x, p50, p1x, base), r.validity.verdict, palette(ti))?;
            let ink = if r.validity.verdict == Verdict::Invalid {
                GREY
            } else {
                BLACK
            };
            let ys = [l.p95, l.p99, l.p999].map(|v| px(x0, v).1);
            percentiles(root, ink, (p0x, p1x), p50, ys)?;
        }
        g.draw_labels(root, &plot, |x| px(x, lo).0)?;
        Ok(plot)
    })
}

/// The latency axis's range: whole decades around every p50 to p99.9.
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
fn latency_tick(root: &Root, plot: &PixelRect, v: f64, y: i32) -> Result<(), String> {
    let grid = RGBColor(225, 225, 225).stroke_width(1);
    drawn(root.draw(&PathElement::new(vec![(plot.x0, y), (plot.x1, y)], grid)))?;
    drawn(root.draw(&PathElement::new(
        vec![(plot.x0 - 5, y), (plot.x0, y)],
        BLACK.stroke_width(1),
    )))?;
    let style = style(TICK_SIZE, false, &BLACK, HPos::Right, VPos::Center);
    drawn(root.draw_text(&human_us(v), &style, (plot.x0 - 8, y)))
}

/// A bar's stem from p50 up to p99.9 with p95 (○), p99 (▲) and p99.9 (━) marked, no wider
/// than the bar, so crowded groups do not run together.
fn percentiles(
    root: &Root,
    ink: RGBColor,
    (x0, x1): (i32, i32),
    p50: i32,
    [y95, y99, y999]: [i32; 3],
) -> Result<(), String> {
    let cx = (x0 + x1) / 2;
    drawn(root.draw(&PathElement::new(
        vec![(cx, p50), (cx, y999.min(p50))],
        ink.stroke_width(2),
    )))?;
    let r = ((x1 - x0) / 2).clamp(3, 5);
    drawn(root.draw(&Circle::new((cx, y95), r, WHITE.filled())))?;
    drawn(root.draw(&Circle::new((cx, y95), r, ink.stroke_width(2))))?;
    drawn(root.draw(&TriangleMarker::new((cx, y99), r + 1, ink.filled())))?;
    let half = ((x1 - x0) / 2).clamp(3, 10);
    drawn(root.draw(&PathElement::new(
        vec![(cx - half, y999), (cx + half, y999)],
        ink.stroke_width(3),
    )))
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

/// Throughput by client threads (log x axis) with every measured thread count labelled, the
/// peak and the knee marked and the knee rule written under the chart: the vary chart with one
/// series. `facts` names the topology's size and server when the sweep ran on a known topology.
pub fn sweep(sweep: &SweepFile, facts: Option<&TopologyFacts>) -> Result<Chart, ChartError> {
    let series = VarySeries {
        label: "throughput (ops/s)".into(),
        points: (sweep.points.iter())
            .map(|p| {
                (
                    p.threads.max(1),
                    p.summary.throughput,
                    p.summary.throughput,
                    p.summary.throughput,
                )
            })
            .collect(),
        not_valid: false,
    };
    let verdicts: Vec<Verdict> = sweep
        .points
        .iter()
        .map(|p| p.summary.validity.verdict)
        .collect();
    let point = |t: Option<u32>| {
        series
            .points
            .iter()
            .find(|p| Some(p.0) == t)
            .map(|p| (p.0, p.2))
    };
    let (peak, knee) = (point(sweep.max_threads), point(sweep.knee_threads));
    let mut legend = vec![entry(Swatch::Line(palette(0)), series.label.clone())];
    if let Some((t, tp)) = peak {
        legend.push(entry(
            Swatch::Peak,
            format!("peak: {t} threads, {} ops/s", human(tp)),
        ));
    }
    if let Some((t, tp)) = knee {
        legend.push(entry(
            Swatch::Knee,
            format!("knee: {t} threads, {} ops/s", human(tp)),
        ));
    }
    if verdicts.contains(&Verdict::Invalid) {
        legend.push(entry(Swatch::Invalid, "invalid point (grey ×)"));
    }
    let mut notes = vec![match (peak, knee) {
        (Some((p, ptp)), Some((k, _))) => format!(
            "Knee rule: the knee is the smallest thread count whose throughput is within {:.0}% of the peak ({} ops/s at {p} threads), i.e. at least {} ops/s; here {k} threads.",
            sweep.tolerance * 100.0,
            human(ptp),
            human(ptp * (1.0 - sweep.tolerance))
        ),
        _ => "No usable points: no peak and no knee.".to_string(),
    }];
    notes.extend(
        sweep
            .points
            .iter()
            .filter(|p| !p.summary.validity.is_valid())
            .map(|p| {
                let v = &p.summary.validity;
                format!(
                    "{} threads is {}: {}",
                    p.threads,
                    verdict_word(v.verdict),
                    v.summary()
                )
            }),
    );
    let title = format!(
        "Throughput by client threads: {}",
        sweep_label(sweep, facts)
    );
    let header = header(&title, &sweep_where(sweep, facts), sweep.standin);
    let marks = |root: &Root, plot: &PixelRect, px: &dyn Fn(u32, f64) -> (i32, i32)| {
        if let Some((t, tp)) = knee {
            let (x, y) = px(t, tp);
            let rule = DashedPathElement::new(
                vec![(x, y), (x, plot.y1)],
                6,
                4,
                palette(2).stroke_width(2),
            );
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
    };
    let layout = thread_layout(header, legend, &notes);
    thread_chart(
        "sweep",
        &layout,
        std::slice::from_ref(&series),
        (1, &verdicts),
        marks,
    )
}

/// The sweep chart's "Where" and "Main operation" lines.
fn sweep_where(sweep: &SweepFile, facts: Option<&TopologyFacts>) -> Vec<String> {
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
    name: &str,
    layout: &Layout,
    series: &[VarySeries],
    (repeats, verdicts): (u32, &[Verdict]),
    marks: F,
) -> Result<Chart, ChartError>
where
    F: FnOnce(&Root, &PixelRect, &dyn Fn(u32, f64) -> (i32, i32)) -> Result<(), String>,
{
    let mut counts: Vec<u32> = (series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.0.max(1)))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let xmin = f64::from(counts.first().copied().unwrap_or(1)) / 1.25;
    let xmax = f64::from(counts.last().copied().unwrap_or(2)).max(2.0) * 1.25;
    let ymax = (series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.3))
        .fold(1.0, f64::max)
        * 1.15;
    compose(name, layout, |root, area| {
        let ranges = ((xmin..xmax).log_scale(), 0f64..ymax);
        let chart = axes(
            area,
            layout.x_label_h,
            ranges,
            "operations per second",
            false,
        )?;
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
            for path in [
                vec![(x, lo), (x, hi)],
                vec![(x - 5, lo), (x + 5, lo)],
                vec![(x - 5, hi), (x + 5, hi)],
            ] {
                drawn(root.draw(&PathElement::new(path, color.stroke_width(2))))?;
            }
        }
        match verdicts.get(j) {
            None => drawn(root.draw(&Circle::new((x, y), 4, color.filled())))?,
            Some(Verdict::Invalid) => {
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
        drawn(root.draw(&PathElement::new(
            vec![(x, plot.y1), (x, plot.y1 + 5)],
            BLACK.stroke_width(1),
        )))?;
        let y = plot.y1 + 8 + row as i32 * line_height(TICK_SIZE);
        text(root, &label, TICK_SIZE, (x, y), HPos::Center)?;
    }
    let y = plot.y1 + 12 + TICK_ROWS * line_height(TICK_SIZE);
    let axis_name = "client threads (log scale; every measured count labelled)";
    text(
        root,
        axis_name,
        LABEL_SIZE,
        ((plot.x0 + plot.x1) / 2, y),
        HPos::Center,
    )
}

/// One curve of a `sweep --vary` chart: a value of the varied property and, per thread count,
/// the lowest, mean and highest throughput over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct VarySeries {
    /// Legend label (`readbatchsize=10`).
    pub label: String,
    /// `(threads, min, mean, max)` ops/s, in thread order.
    pub points: Vec<(u32, f64, f64, f64)>,
    /// Some point of the curve is not valid.
    pub not_valid: bool,
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
        .map(|s| match s.not_valid {
            true => format!("{} (some points not valid: see notes)", s.label),
            false => s.label.clone(),
        })
        .enumerate()
        .map(|(i, label)| entry(Swatch::Line(palette(i)), label))
        .collect();
    if repeats > 1 {
        legend.push(entry(
            Swatch::Whisker,
            format!("min–max of {repeats} repetitions"),
        ));
    }
    let whiskers = if repeats > 1 {
        "; whiskers: the lowest and highest repetition"
    } else {
        ""
    };
    let mut all_notes = vec![format!(
        "Lines: mean throughput over {repeats} repetition(s) at each thread count{whiskers}."
    )];
    all_notes.extend(notes.iter().cloned());
    let header = header(title, &[format!("Where: {server}.")], standin);
    let layout = thread_layout(header, legend, &all_notes);
    thread_chart("vary", &layout, series, (repeats, &[]), |_, _, _| Ok(()))
}

/// A sweep's label with its topology named, not given by path (`S2 on single`).
pub(crate) fn sweep_label(sweep: &SweepFile, facts: Option<&TopologyFacts>) -> String {
    match facts {
        Some(f) if f.given != f.name => sweep.label.replace(&f.given, &f.name),
        _ => sweep.label.clone(),
    }
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
        assert!(svg.contains(">\nsingle ceiling\n</text>"));
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
            !svg.contains(">\nsingle ceiling\n</text>"),
            "no ceiling legend"
        );
        assert!(svg.contains("No single ceiling for S1"), "{svg}");
        assert!(svg.contains("stopped answering"));
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
            not_run: Vec::new(),
            dead: None,
            planned_threads: Vec::new(),
            memory: None,
        };
        let facts = TopologyFacts {
            name: "single".into(),
            given: "/home/me/topologies/single.toml".into(),
            ..TopologyFacts::default()
        };
        assert_eq!(sweep_label(&s, Some(&facts)), "S2 on single");
        let svg = sweep(&s, Some(&facts)).map(|c| c.svg).unwrap_or_default();
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
                threads: t,
                summary: CellSummary {
                    throughput: tp,
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
            not_run: Vec::new(),
            dead: None,
            planned_threads: Vec::new(),
            memory: None,
        };
        let svg = sweep(&s, None).map(|c| c.svg).unwrap_or_default();
        assert!(svg.contains("knee: 4 threads"), "{svg}");
        assert!(svg.contains("peak: 8 threads"), "{svg}");
        assert!(svg.contains("within 5% of the peak"), "{svg}");
        for t in ["1", "2", "4", "8"] {
            assert!(
                svg.contains(&format!(">\n{t}\n</text>")),
                "thread label {t}"
            );
        }
    }
}
