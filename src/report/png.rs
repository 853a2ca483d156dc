//! PNG copies of the SVG charts (resvg, in-process, with this machine's fonts), so a write-up
//! that cannot embed SVG still gets a picture; and where every text of a chart lands once laid
//! out with real fonts, so tests can check that no text overlaps the data or other text.

use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};
use thiserror::Error;

use crate::experiment::results::{ExperimentDir, ResultsError, write_bytes_atomic};

/// A chart that could not be turned into a PNG.
#[derive(Debug, Error)]
pub enum PngError {
    /// No font is installed: text would be missing from the picture, so none is written.
    #[error("no font installed to draw the chart's text")]
    NoFonts,
    /// The SVG did not parse.
    #[error("chart SVG does not parse: {0}")]
    Parse(String),
    /// The canvas could not be allocated or encoded.
    #[error("PNG: {0}")]
    Encode(String),
}

/// Families tried, in order, for the charts' `sans-serif`.
const SANS: [&str; 5] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Arial",
    "FreeSans",
];

/// The system fonts, loaded once per process (loading them takes a noticeable moment).
fn fonts() -> Option<Arc<usvg::fontdb::Database>> {
    static FONTS: OnceLock<Option<Arc<usvg::fontdb::Database>>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            if db.is_empty() {
                return None;
            }
            let families: Vec<String> = db
                .faces()
                .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
                .collect();
            let sans = SANS
                .iter()
                .find(|want| families.iter().any(|f| f == *want))
                .map(|s| s.to_string())
                .or_else(|| families.first().cloned())?;
            db.set_sans_serif_family(sans);
            Some(Arc::new(db))
        })
        .clone()
}

fn tree(svg: &str) -> Result<usvg::Tree, PngError> {
    let fontdb = fonts().ok_or(PngError::NoFonts)?;
    let options = usvg::Options {
        fontdb,
        ..usvg::Options::default()
    };
    usvg::Tree::from_str(svg, &options).map_err(|e| PngError::Parse(e.to_string()))
}

/// Renders an SVG to PNG bytes at its own size, on white.
pub fn svg_to_png(svg: &str) -> Result<Vec<u8>, PngError> {
    let tree = tree(svg)?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| PngError::Encode(format!("{}×{} canvas", size.width(), size.height())))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| PngError::Encode(e.to_string()))
}

/// One text of a laid-out SVG and the box it covers, pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct TextBox {
    /// The text.
    pub text: String,
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
}

/// Every text of an SVG with the box the real fonts give it (line boxes: ascent to descent).
pub fn text_boxes(svg: &str) -> Result<Vec<TextBox>, PngError> {
    let tree = tree(svg)?;
    let mut out = Vec::new();
    collect(tree.root(), &mut out);
    Ok(out)
}

fn collect(group: &usvg::Group, out: &mut Vec<TextBox>) {
    for node in group.children() {
        match node {
            usvg::Node::Group(g) => collect(g, out),
            usvg::Node::Text(t) => {
                let b = t.abs_bounding_box();
                let text: String = t.chunks().iter().map(|c| c.text()).collect();
                out.push(TextBox {
                    text,
                    x0: b.left(),
                    y0: b.top(),
                    x1: b.right(),
                    y1: b.bottom(),
                });
            }
            _ => {}
        }
    }
}
/// Writes a chart as SVG and, when this machine has a font to draw its text with, as PNG beside
/// it (`name.svg`, `name.png`).
pub(crate) fn write_chart(dir: &ExperimentDir, name: &str, svg: &str) -> Result<(), ResultsError> {
    dir.write_text(&format!("{name}.svg"), svg)?;
    if let Ok(png) = svg_to_png(svg) {
        write_bytes_atomic(&dir.path().join(format!("{name}.png")), &png)?;
    }
    Ok(())
}
