//! Text layout of the charts: widths, wrapping to a width, and lines drawn top-down.

use super::*;

/// Width of `text` in pixels at plotters font `size` (plotters writes `font-size = size / 1.24`
/// into the SVG), laid out with the fonts the PNGs are drawn with (`png::text_boxes`), plus 4%
/// so that layout never underestimates; 0.64 em a character where no font is installed.
pub(crate) fn text_width(text: &str, size: u32) -> i32 {
    measure(text, size, false)
}

/// [`text_width`] in the regular or the bold face.
pub(super) fn measure(text: &str, size: u32, bold: bool) -> i32 {
    let weight = if bold { "bold" } else { "normal" };
    let px = f64::from(size) / 1.24;
    // Only `&` and `<` end a text node early (the text is measured, never shown).
    let escaped = text.replace('&', "&amp;").replace('<', "&lt;");
    let svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><text x="0" y="{px}" font-family="sans-serif" font-size="{px}" font-weight="{weight}" xml:space="preserve">{escaped}</text></svg>"#
    );
    let measured = crate::report::png::text_boxes(&svg).ok().and_then(|b| {
        let b = b.first()?;
        Some(f64::from(b.x1 - b.x0))
    });
    let width = measured.unwrap_or(0.64 * px * text.chars().count() as f64);
    (width * 1.04).ceil() as i32
}

pub(super) fn line_height(size: u32) -> i32 {
    // The font is size / 1.24 pixels high; leave room for descenders and a gap.
    (f64::from(size) * 1.05).ceil() as i32 + 4
}

/// Breaks `text` into lines no wider than `max_px` (words longer than a line are cut).
pub(crate) fn wrap(text: &str, max_px: i32, size: u32) -> Vec<String> {
    wrap_as(text, max_px, size, false)
}

/// [`wrap`] in the regular or the bold face.
pub(super) fn wrap_as(text: &str, max_px: i32, size: u32, bold: bool) -> Vec<String> {
    let text_width = |t: &str, size: u32| measure(t, size, bold);
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
        let mut parts: Vec<String> = word.split_inclusive('-').map(str::to_string).collect();
        if parts.len() < 2 || parts.iter().any(|p| text_width(p, size) > max_px) {
            parts = word.chars().map(String::from).collect();
        }
        for part in parts {
            let joined = format!("{current}{part}");
            if text_width(&joined, size) > max_px && !current.is_empty() {
                lines.push(std::mem::replace(&mut current, part));
            } else {
                current = joined;
            }
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// One line of text the layout places: words, size, weight and colour.
#[derive(Clone)]
pub(super) struct Line {
    pub(super) text: String,
    pub(super) size: u32,
    pub(super) bold: bool,
    pub(super) color: RGBColor,
}

impl Line {
    pub(super) fn plain(text: String, size: u32) -> Line {
        Line {
            text,
            size,
            bold: false,
            color: BLACK,
        }
    }
}

/// Wraps paragraphs into lines of at most `max_px`.
pub(super) fn lines_of(paragraphs: &[Line], max_px: i32) -> Vec<Line> {
    paragraphs
        .iter()
        .flat_map(|p| {
            wrap_as(&p.text, max_px, p.size, p.bold)
                .into_iter()
                .map(|text| Line { text, ..p.clone() })
                .collect::<Vec<_>>()
        })
        .collect()
}

pub(super) fn block_height(lines: &[Line]) -> i32 {
    lines.iter().map(|l| line_height(l.size)).sum()
}

pub(super) fn style(
    size: u32,
    bold: bool,
    color: &RGBColor,
    h: HPos,
    v: VPos,
) -> TextStyle<'static> {
    let font = if bold {
        ("sans-serif", size).into_font().style(FontStyle::Bold)
    } else {
        ("sans-serif", size).into_font()
    };
    let mut s = TextStyle::from(font).pos(Pos::new(h, v));
    s.color = color.to_backend_color();
    s
}

pub(super) fn text(
    root: &Root,
    s: &str,
    size: u32,
    (x, y): (i32, i32),
    h: HPos,
) -> Result<(), String> {
    drawn(root.draw_text(s, &style(size, false, &BLACK, h, VPos::Top), (x, y)))
}

/// Draws lines top-down from `(x, y)`; returns the y below the last one.
pub(super) fn draw_lines(root: &Root, lines: &[Line], x: i32, mut y: i32) -> Result<i32, String> {
    for l in lines {
        let style = style(l.size, l.bold, &l.color, HPos::Left, VPos::Top);
        drawn(root.draw_text(&l.text, &style, (x, y)))?;
        y += line_height(l.size);
    }
    Ok(y)
}
