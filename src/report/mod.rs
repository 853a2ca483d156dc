//! Experiment reports: comparison tables, Markdown/CSV/JSON output and SVG charts.
