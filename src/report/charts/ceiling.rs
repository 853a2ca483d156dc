//! The ceiling chart of a `compare --ceiling` scenario: the intended latency at the bound's
//! percentile against the offered rate, one line per topology, the bound drawn across (the
//! "hockey stick": flat while the servers keep up, steep where they queue). Each step is marked
//! by what it did — passed, or the rule it failed — each search's ceiling is ringed at the rate
//! it offered, degraded steps carry a grey halo, and under a stand-in capacity model each
//! topology's capacity is a dotted line. It reads without the tables (`docs/ceiling.md`).

use super::*;
use crate::experiment::ceiling::search::{Rule, thousands};
use crate::report::ceiling::{CeilingCell, CeilingPart, Point};

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
    let bound = part.drawn.as_ref();
    let quantile = bound.map_or("p99", |b| b.name.as_str());
    let model: Vec<(usize, f64)> = (cells.iter().enumerate())
        .filter_map(|(i, c)| Some((i, part.model.iter().find(|(t, _)| *t == c.topology)?.1)))
        .collect();
    let points = || cells.iter().flat_map(|c| c.points.iter());
    let xmax = (points().map(|p| p.offered))
        .chain(model.iter().map(|m| m.1))
        .fold(1.0, f64::max)
        * 1.08;
    let ys = points()
        .map(|p| ms(p.at_bound_us))
        .chain(bound.map(|b| ms(b.limit_us)));
    let (ylo, yhi) = ys.fold((f64::MAX, 1.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (ylo, yhi) = (ylo / 1.5, yhi * 1.5);
    let layout = Layout {
        header: header(
            &format!("Ceiling search: intended {quantile} by offered rate, {scenario}"),
            where_,
            standin,
        ),
        notes: notes_lines(&notes(part, &cells, quantile)),
        legend: legend(part, &cells, &model),
        x_label_h: 12 + line_height(TICK_SIZE) + line_height(LABEL_SIZE) + 8,
    };
    let y_name = format!("intended {quantile} (log scale)");
    Some(compose("ceiling", &layout, |root, area| {
        let ranges = (0f64..xmax, (ylo..yhi).log_scale());
        let chart = axes(area, layout.x_label_h, ranges, &y_name, true)?;
        let plot = rect_of(chart.plotting_area().get_pixel_range());
        let px = |x: f64, y: f64| chart.backend_coord(&(x, y.clamp(ylo, yhi)));
        let dense = f64::from(plot.y1 - plot.y0) / (yhi / ylo).log10().max(1.0) >= 70.0;
        for v in log_ticks(ylo, yhi, dense) {
            super::groups::latency_tick(root, &plot, v * 1e3, px(0.0, v).1)?;
        }
        if let Some(b) = bound {
            let (_, y) = px(0.0, ms(b.limit_us));
            let rule = DashedPathElement::new(
                vec![(plot.x0, y), (plot.x1, y)],
                8,
                5,
                DARK_RED.stroke_width(2),
            );
            drawn(root.draw(&rule))?;
        }
        for (i, capacity) in &model {
            capacity_line(root, &plot, px(*capacity, ylo).0, palette(*i))?;
        }
        for (i, c) in cells.iter().enumerate() {
            cell_line(root, c, palette(i), &px)?;
        }
        rate_axis(root, &plot, xmax, &|x| px(x, ylo).0)?;
        Ok(plot)
    }))
}

/// The legend: one line per topology, the bound, what each mark means (only the marks drawn),
/// the ring, the halo and the capacity lines.
fn legend(part: &CeilingPart, cells: &[&CeilingCell], model: &[(usize, f64)]) -> Vec<LegendEntry> {
    let mut legend: Vec<LegendEntry> = (cells.iter().enumerate())
        .map(|(i, c)| entry(Swatch::Line(palette(i)), line_label(c)))
        .collect();
    if let Some(b) = &part.drawn {
        legend.push(entry(Swatch::Dashed, format!("the bound: {}", b.shown())));
    }
    let points: Vec<&Point> = cells.iter().flat_map(|c| c.points.iter()).collect();
    let rules = [
        None,
        Some(Rule::Latency),
        Some(Rule::Achieved),
        Some(Rule::Threads),
        Some(Rule::ClientCpu),
        Some(Rule::Stall),
        Some(Rule::Errors),
        Some(Rule::Invalid),
    ];
    for rule in rules
        .into_iter()
        .filter(|r| points.iter().any(|p| p.rule == *r))
    {
        let label = match rule {
            None => "passed".to_string(),
            Some(r) => format!("failed: {}", r.word()),
        };
        legend.push(entry(Swatch::Rule(rule), label));
    }
    legend.push(entry(
        Swatch::Circle,
        "ringed: a search's ceiling, the highest rate that passed",
    ));
    if points.iter().any(|p| p.degraded) {
        legend.push(entry(Swatch::Halo, "grey halo: a degraded step"));
    }
    if !model.is_empty() {
        legend.push(entry(
            Swatch::Dotted,
            "dotted: the stand-in's capacity model",
        ));
    }
    legend
}

/// The notes under the chart: what a point is, repeated rates, degraded steps, the model.
fn notes(part: &CeilingPart, cells: &[&CeilingCell], quantile: &str) -> Vec<String> {
    let mut notes = vec![format!(
        "Each point is one step of a search: a rate offered open loop for {:.0} s or longer, and the intended {quantile} there, measured from each operation's planned start (coordinated omission corrected). A failing rate is tried again before it counts; where a search tried a rate more than once, \"k/n\" says how many of its trials passed.",
        part.step_s
    )];
    let points: Vec<&Point> = cells.iter().flat_map(|c| c.points.iter()).collect();
    let degraded = points.iter().filter(|p| p.degraded).count();
    if degraded > 0 {
        notes.push(format!(
            "{degraded} of {} steps are degraded (grey halo); the steps table says why.",
            points.len()
        ));
    }
    let model: Vec<String> = (cells.iter())
        .filter_map(|c| part.model.iter().find(|(t, _)| *t == c.topology))
        .map(|(t, c)| format!("{t} {} ops/s", thousands(*c)))
        .collect();
    if !model.is_empty() {
        notes.push(format!(
            "The stand-in's capacity model (dotted): {}.",
            model.join(", ")
        ));
    }
    notes
}

/// `single: ceiling 1,912 ops/s`, or `microshard-4: no ceiling`.
fn line_label(c: &CeilingCell) -> String {
    match (c.ceiling, c.client_limited) {
        (Some(v), false) => format!("{}: ceiling {} ops/s", c.topology, thousands(v)),
        (Some(v), true) => format!("{}: ≥ {} ops/s (client-limited)", c.topology, thousands(v)),
        (None, _) => format!("{}: no ceiling", c.topology),
    }
}

/// A topology's steps, in rate order: the line through the worst latency at each rate, every
/// step marked by what it did, repeated rates counted, each search's ceiling ringed.
fn cell_line(
    root: &Root,
    c: &CeilingCell,
    color: RGBColor,
    px: &dyn Fn(f64, f64) -> (i32, i32),
) -> Result<(), String> {
    let mut steps = c.points.clone();
    steps.sort_by(|a, b| (a.offered.total_cmp(&b.offered)).then(a.at_bound_us.cmp(&b.at_bound_us)));
    let mut line: Vec<(f64, u64)> = Vec::new();
    for p in &steps {
        match line.last_mut() {
            Some(last) if last.0 == p.offered => last.1 = last.1.max(p.at_bound_us),
            _ => line.push((p.offered, p.at_bound_us)),
        }
    }
    let path: Vec<(i32, i32)> = line.iter().map(|p| px(p.0, ms(p.1))).collect();
    drawn(root.draw(&PathElement::new(path, color.stroke_width(2))))?;
    for p in &steps {
        let xy = px(p.offered, ms(p.at_bound_us));
        if p.degraded {
            drawn(root.draw(&Circle::new(xy, 9, RGBColor(200, 200, 200).filled())))?;
        }
        mark(root, xy, p.rule, color)?;
    }
    for (offered, repeat, k, n) in tallies(&steps) {
        let worst = (steps.iter())
            .filter(|p| p.offered == offered && p.repeat == repeat)
            .map(|p| p.at_bound_us)
            .max()
            .unwrap_or(0);
        let (x, y) = px(offered, ms(worst));
        text(
            root,
            &format!("{k}/{n}"),
            NOTE_SIZE,
            (x + 8, y - 22),
            HPos::Left,
        )?;
    }
    for (rate, at) in &c.rings {
        let xy = px(*rate, ms(*at));
        drawn(root.draw(&Circle::new(xy, 11, BLACK.stroke_width(2))))?;
    }
    Ok(())
}

/// Each rate a search tried more than once: `(rate, search, passed, trials)`.
fn tallies(steps: &[Point]) -> Vec<(f64, u32, usize, usize)> {
    let mut out: Vec<(f64, u32, usize, usize)> = Vec::new();
    for p in steps {
        let passed = usize::from(p.rule.is_none());
        match out.iter_mut().find(|t| t.0 == p.offered && t.1 == p.repeat) {
            Some(t) => (t.2, t.3) = (t.2 + passed, t.3 + 1),
            None => out.push((p.offered, p.repeat, passed, 1)),
        }
    }
    out.retain(|t| t.3 > 1);
    out
}

/// A step's mark: a dot in its colour when it passed; when it failed, a hollow ring (latency),
/// a hollow square (achieved rate), a hollow triangle (the client) or a cross (invalid, a stall,
/// errors).
pub(super) fn mark(
    root: &Root,
    (x, y): (i32, i32),
    rule: Option<Rule>,
    color: RGBColor,
) -> Result<(), String> {
    let ink = color.stroke_width(2);
    match rule {
        None => drawn(root.draw(&Circle::new((x, y), 5, color.filled()))),
        Some(Rule::Latency) => {
            drawn(root.draw(&Circle::new((x, y), 5, WHITE.filled())))?;
            drawn(root.draw(&Circle::new((x, y), 5, ink)))
        }
        Some(Rule::Achieved) => {
            let square = [(x - 5, y - 5), (x + 5, y + 5)];
            drawn(root.draw(&Rectangle::new(square, WHITE.filled())))?;
            drawn(root.draw(&Rectangle::new(square, ink)))
        }
        Some(Rule::Threads | Rule::ClientCpu) => {
            let tri = vec![(x, y - 6), (x + 6, y + 5), (x - 6, y + 5), (x, y - 6)];
            drawn(root.draw(&Polygon::new(tri.clone(), WHITE.filled())))?;
            drawn(root.draw(&PathElement::new(tri, ink)))
        }
        Some(Rule::Invalid | Rule::Stall | Rule::Errors) => {
            drawn(root.draw(&Cross::new((x, y), 5, color.stroke_width(3))))
        }
    }
}

/// A dotted vertical line at pixel column `x`.
fn capacity_line(root: &Root, plot: &PixelRect, x: i32, color: RGBColor) -> Result<(), String> {
    let line = DashedPathElement::new(
        vec![(x, plot.y0), (x, plot.y1)],
        2,
        4,
        color.stroke_width(2),
    );
    drawn(root.draw(&line))
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
