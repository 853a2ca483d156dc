//! SVG charts (plotters): throughput by scenario and topology with the baseline ceiling, latency
//! percentiles, and the thread-sweep curve. Titles say `stand-in` whenever the figures are.

use plotters::coord::Shift;
use plotters::prelude::*;
use thiserror::Error;

use super::Report;
use crate::experiment::model::SweepFile;

/// A chart that could not be drawn.
#[derive(Debug, Error)]
#[error("chart {name}: {message}")]
pub struct ChartError {
    /// Which chart.
    pub name: String,
    /// What plotters said.
    pub message: String,
}

fn err(name: &str) -> impl Fn(String) -> ChartError + '_ {
    move |message| ChartError {
        name: name.to_string(),
        message,
    }
}

const SIZE: (u32, u32) = (1000, 560);

fn palette(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    COLORS[i % COLORS.len()]
}

fn title(base: &str, standin: bool) -> String {
    if standin {
        format!("{base} — stand-in figures, not MongoDB")
    } else {
        base.to_string()
    }
}

fn draw<F>(name: &str, f: F) -> Result<String, ChartError>
where
    F: FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(name)(e.to_string()))?;
        f(&root).map_err(err(name))?;
        root.present().map_err(|e| err(name)(e.to_string()))?;
    }
    Ok(svg)
}

/// Grouped bars: one group per scenario, one bar per topology, and the baseline's throughput
/// drawn as a line across each group (the single-node ceiling).
pub fn throughput_chart(report: &Report) -> Result<String, ChartError> {
    let scenarios = distinct(report.rows.iter().map(|r| r.scenario.clone()));
    let topologies = distinct(report.rows.iter().map(|r| r.topology.clone()));
    let max = report
        .rows
        .iter()
        .filter_map(|r| r.throughput)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.15;
    let k = topologies.len().max(1) as f64;
    draw("throughput", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                title(
                    "Throughput by scenario and topology (ops/s)",
                    report.standin(),
                ),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..scenarios.len().max(1) as f64, 0f64..max)
            .map_err(|e| e.to_string())?;
        let names = scenarios.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(scenarios.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                let frac = x.fract();
                if (frac - 0.5).abs() < 0.01 {
                    names.get(x.floor() as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("ops/s")
            .draw()
            .map_err(|e| e.to_string())?;
        for (ti, topo) in topologies.iter().enumerate() {
            let color = palette(ti);
            let bars: Vec<Rectangle<(f64, f64)>> = report
                .rows
                .iter()
                .filter(|r| &r.topology == topo)
                .filter_map(|r| {
                    let si = scenarios.iter().position(|s| *s == r.scenario)? as f64;
                    let x0 = si + 0.1 + 0.8 * ti as f64 / k;
                    let x1 = x0 + 0.8 / k * 0.9;
                    Some(Rectangle::new(
                        [(x0, 0.0), (x1, r.throughput?)],
                        color.filled(),
                    ))
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(topo.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        let ceilings: Vec<PathElement<(f64, f64)>> = report
            .rows
            .iter()
            .filter(|r| r.topology == report.baseline)
            .filter_map(|r| {
                let si = scenarios.iter().position(|s| *s == r.scenario)? as f64;
                let y = r.throughput?;
                Some(PathElement::new(
                    vec![(si + 0.05, y), (si + 0.95, y)],
                    BLACK.stroke_width(2),
                ))
            })
            .collect();
        chart
            .draw_series(ceilings)
            .map_err(|e| e.to_string())?
            .label(format!("{} ceiling", report.baseline))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], BLACK.stroke_width(2)));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())
    })
}

/// Latency percentiles (p50, p95, p99, p99.9) of every measured row, log scale.
pub fn latency_chart(report: &Report) -> Result<String, ChartError> {
    let rows: Vec<_> = report.rows.iter().filter(|r| r.latency.is_some()).collect();
    let max = rows
        .iter()
        .filter_map(|r| r.latency.as_ref().map(|l| l.p999.max(l.p99)))
        .fold(10.0, f64::max)
        * 2.0;
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", r.scenario, r.topology))
        .collect();
    draw("latency", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                title(
                    "Latency percentiles of the main operation (µs)",
                    report.standin(),
                ),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(90)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..rows.len().max(1) as f64, (1f64..max).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(rows.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                if (x.fract() - 0.5).abs() < 0.01 {
                    labels.get(x.floor() as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_style(
                ("sans-serif", 11)
                    .into_font()
                    .transform(FontTransform::Rotate90),
            )
            .y_desc("µs")
            .draw()
            .map_err(|e| e.to_string())?;
        type Pick = fn(&crate::experiment::model::Latency) -> f64;
        let pcts: [(&str, Pick); 4] = [
            ("p50", |l| l.p50),
            ("p95", |l| l.p95),
            ("p99", |l| l.p99),
            ("p99.9", |l| l.p999),
        ];
        for (pi, (name, f)) in pcts.iter().enumerate() {
            let color = palette(pi);
            let bars: Vec<Rectangle<(f64, f64)>> = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let v = f(r.latency.as_ref()?).max(1.0);
                    let x0 = i as f64 + 0.1 + 0.2 * pi as f64;
                    Some(Rectangle::new([(x0, 1.0), (x0 + 0.18, v)], color.filled()))
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())
    })
}

/// Throughput by thread count (log₂ x axis) with the maximum and the knee marked.
pub fn sweep_chart(sweep: &SweepFile) -> Result<String, ChartError> {
    let pts: Vec<(f64, f64)> = sweep
        .points
        .iter()
        .map(|p| (f64::from(p.threads.max(1)), p.summary.throughput))
        .collect();
    let xmax = pts.iter().map(|p| p.0).fold(2.0, f64::max) * 1.5;
    let ymax = pts.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
    draw("sweep", |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                title(&format!("Thread sweep: {}", sweep.label), sweep.standin),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((0.8f64..xmax).log_scale(), 0f64..ymax)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("client threads")
            .y_desc("ops/s")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(LineSeries::new(pts.clone(), palette(0).stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label("throughput")
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 12, y)], palette(0).stroke_width(2))
            });
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 4, palette(0).filled())))
            .map_err(|e| e.to_string())?;
        let knee_point = sweep
            .knee_threads
            .and_then(|k| Some((k, *pts.iter().find(|p| p.0 == f64::from(k))?)));
        if let Some((knee, p)) = knee_point {
            chart
                .draw_series(std::iter::once(Circle::new(
                    p,
                    9,
                    palette(3).stroke_width(3),
                )))
                .map_err(|e| e.to_string())?
                .label(format!("knee: {knee} threads"))
                .legend(|(x, y)| Circle::new((x + 5, y), 5, palette(3).stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(|e| e.to_string())
    })
}

fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::model::{CellSummary, SweepPoint};
    use crate::report::tests::{cell, config};

    #[test]
    fn charts_are_svg_and_say_standin() {
        let mut c = cell("single", "S1", 1, 1000.0);
        c.summary.standin = true;
        let r =
            crate::report::build_from(&config(false), &[c, cell("microshard-2", "S1", 1, 1900.0)]);
        let svg = throughput_chart(&r).unwrap_or_default();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.contains("stand-in"));
        assert!(svg.contains("single ceiling"));
        let svg = latency_chart(&r).unwrap_or_default();
        assert!(svg.contains("<svg") && svg.contains("p99.9"));
        let plain = crate::report::build_from(&config(false), &[cell("single", "S1", 1, 1000.0)]);
        assert!(
            !throughput_chart(&plain)
                .unwrap_or_default()
                .contains("stand-in")
        );
    }

    #[test]
    fn sweep_chart_marks_knee() {
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
        };
        let svg = sweep_chart(&s).unwrap_or_default();
        assert!(svg.contains("knee: 4 threads"), "{svg}");
    }
}
