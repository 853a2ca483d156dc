//! The ceiling chart of a `compare --ceiling` scenario: intended latency at the bound's quantile
//! against the offered rate, one line per topology, the bound drawn across (the "hockey stick":
//! flat while the servers keep up, steep where they queue), each topology's ceiling ringed.

use super::*;
use crate::report::ceiling::{CeilingCell, CeilingPart};

/// One scenario's chart; `None` when no step of it offered a rate.
pub fn ceiling(
    part: &CeilingPart,
    scenario: &str,
    where_: &[String],
    standin: bool,
) -> Option<Result<Chart, ChartError>> {
    let cells: Vec<&CeilingCell> = (part.cells.iter())
        .filter(|c| c.scenario == scenario && !c.points.is_empty())
        .collect();
    if cells.is_empty() {
        return None;
    }
    // Milliseconds: the unit bounds are given in.
    let limit = part.drawn.as_ref().map(|b| ms(b.limit_us));
    let points = || cells.iter().flat_map(|c| c.points.iter());
    let xmax = points().map(|p| p.0).fold(1.0, f64::max) * 1.08;
    let ys = points().map(|p| ms(p.1)).chain(limit);
    let (ylo, yhi) = ys.fold((f64::MAX, 1.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (ylo, yhi) = (ylo / 1.5, yhi * 1.5);
    let mut legend: Vec<LegendEntry> = (cells.iter().enumerate())
        .map(|(i, c)| entry(Swatch::Line(palette(i)), line_label(c)))
        .collect();
    if let Some(b) = &part.drawn {
        legend.push(entry(Swatch::Dashed, format!("the bound: {}", b.shown())));
    }
    legend.push(entry(
        Swatch::Circle,
        "the ceiling (ringed): achieved rate and intended p99 of its confirmations",
    ));
    let notes = vec![format!(
        "Each point is one step of the search: a rate offered for {:.0} s (open loop) and the intended latency at the bound's percentile, measured from each operation's planned start (coordinated omission corrected). Filled: the step sustained its rate within the bound; hollow: it did not (why is in the ceiling table).",
        part.step_s
    )];
    let title = format!("Intended latency by offered rate: {scenario}");
    let layout = Layout {
        header: header(&title, where_, standin),
        notes: notes_lines(&notes),
        legend,
        x_label_h: 12 + line_height(TICK_SIZE) + line_height(LABEL_SIZE) + 8,
    };
    let quantile = part.drawn.as_ref().map_or("p99", |b| b.name.as_str());
    let y_name = format!("intended {quantile}, ms (log scale)");
    Some(compose("ceiling", &layout, |root, area| {
        let ranges = (0f64..xmax, (ylo..yhi).log_scale());
        let chart = axes(area, layout.x_label_h, ranges, &y_name, false)?;
        let plot = rect_of(chart.plotting_area().get_pixel_range());
        let px = |x: f64, y: f64| chart.backend_coord(&(x, y.max(ylo)));
        if let Some(l) = limit {
            let (_, y) = px(0.0, l);
            let rule = DashedPathElement::new(
                vec![(plot.x0, y), (plot.x1, y)],
                8,
                5,
                DARK_RED.stroke_width(2),
            );
            drawn(root.draw(&rule))?;
        }
        for (i, c) in cells.iter().enumerate() {
            cell_line(root, c, palette(i), &px)?;
        }
        rate_axis(root, &plot, xmax, &|x| px(x, ylo).0)?;
        Ok(plot)
    }))
}

/// `single: 1,912 ops/s`, or `microshard-4: no ceiling`.
fn line_label(c: &CeilingCell) -> String {
    match c.ceiling {
        Some(v) => format!("{}: ceiling {} ops/s", c.topology, human(v)),
        None => format!("{}: no ceiling", c.topology),
    }
}

/// A topology's steps, in rate order: the line, filled or hollow points, the ceiling ringed.
fn cell_line(
    root: &Root,
    c: &CeilingCell,
    color: RGBColor,
    px: &dyn Fn(f64, f64) -> (i32, i32),
) -> Result<(), String> {
    let mut steps = c.points.clone();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    // The line goes through the worst latency at each rate (a rate measured again, a
    // confirmation, is one point of the curve); every step is drawn.
    let mut line: Vec<(f64, u64)> = Vec::new();
    for p in &steps {
        match line.last_mut() {
            Some(last) if last.0 == p.0 => last.1 = last.1.max(p.1),
            _ => line.push((p.0, p.1)),
        }
    }
    let line: Vec<(i32, i32)> = line.iter().map(|p| px(p.0, ms(p.1))).collect();
    drawn(root.draw(&PathElement::new(line, color.stroke_width(2))))?;
    for p in &steps {
        let xy = px(p.0, ms(p.1));
        if p.2 {
            drawn(root.draw(&Circle::new(xy, 5, color.filled())))?;
        } else {
            drawn(root.draw(&Circle::new(xy, 5, WHITE.filled())))?;
            drawn(root.draw(&Circle::new(xy, 5, color.stroke_width(2))))?;
        }
    }
    if let (Some(rate), Some(p99)) = (c.ceiling, c.p99_us) {
        let xy = px(rate, ms(p99));
        drawn(root.draw(&Circle::new(xy, 10, BLACK.stroke_width(2))))?;
    }
    Ok(())
}

/// Microseconds as milliseconds.
fn ms(us: u64) -> f64 {
    us.max(1) as f64 / 1e3
}

/// The offered-rate axis: five round ticks from 0, labelled in human numbers.
fn rate_axis(
    root: &Root,
    plot: &PixelRect,
    xmax: f64,
    x_of: &dyn Fn(f64) -> i32,
) -> Result<(), String> {
    let raw = xmax / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(raw);
    let mut v = 0.0;
    while v <= xmax {
        x_tick(root, plot, (x_of(v), 0), &human(v))?;
        v += step;
    }
    x_name(root, plot, 1, "offered rate (ops/s)")
}
