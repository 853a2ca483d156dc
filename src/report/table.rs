//! A result's table built once — its columns and its rows — and written by one writer per
//! format (terminal, Markdown, CSV, HTML), as hyperfine's exporters write one set of results: a
//! result kind says what its rows hold, never how a format lays them out.

/// Which tables print a column: those a reader reads (terminal, Markdown, HTML), the CSV, or
/// both. A figure a reader reads rounded may be written raw to the CSV beside columns only the
/// CSV has (the raw halves of a range, a verdict per repetition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    Both,
    Read,
    Csv,
}

/// One column: its title, its CSV name, and how Markdown aligns it.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    /// The title the terminal, Markdown and HTML tables print.
    pub title: String,
    /// Its name in the CSV header (machine-friendly: `throughput_ops_s`).
    pub csv: String,
    /// Left-aligned in Markdown (words); right-aligned otherwise (figures).
    pub left: bool,
    /// Which tables print it.
    pub shown: Shown,
}

impl Column {
    /// A column of figures, titled `title` for readers and `csv` in the CSV.
    pub(crate) fn figures(title: impl Into<String>, csv: impl Into<String>) -> Column {
        Column {
            title: title.into(),
            csv: csv.into(),
            left: false,
            shown: Shown::Both,
        }
    }

    /// A column of words.
    pub(crate) fn words(title: impl Into<String>, csv: impl Into<String>) -> Column {
        Column {
            left: true,
            ..Column::figures(title, csv)
        }
    }

    /// This column in the tables a reader reads only.
    pub(crate) fn read_only(self) -> Column {
        Column {
            shown: Shown::Read,
            ..self
        }
    }

    /// This column in the CSV only.
    pub(crate) fn csv_only(self) -> Column {
        Column {
            shown: Shown::Csv,
            ..self
        }
    }
}

/// One cell: what a reader reads, and the CSV field as written (quoted where it must be).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Cell {
    /// The text the terminal, Markdown and HTML tables print.
    pub read: String,
    /// The CSV field, already quoted.
    pub csv: String,
}

impl Cell {
    /// The same words in every format.
    pub(crate) fn text(s: impl Into<String>) -> Cell {
        let read = s.into();
        Cell {
            csv: csv_field(&read),
            read,
        }
    }

    /// A figure read one way (rounded, with its unit or mark) and written raw to the CSV.
    pub(crate) fn figure(read: impl Into<String>, csv: impl AsRef<str>) -> Cell {
        Cell {
            read: read.into(),
            csv: csv_field(csv.as_ref()),
        }
    }

    /// A value or, without one, a dash for readers and nothing in the CSV.
    pub(crate) fn or_dash(v: Option<impl ToString>) -> Cell {
        v.map_or_else(|| Cell::figure("—", ""), |v| Cell::text(v.to_string()))
    }

    /// Words always quoted in the CSV, even empty (a column a spreadsheet must read as text).
    pub(crate) fn quoted(s: impl Into<String>) -> Cell {
        let read = s.into();
        Cell {
            csv: format!("\"{}\"", read.replace('"', "\"\"")),
            read,
        }
    }
}

/// How Markdown writes the rule under the header: `| --- | ---: |` or `|---|---:|` (the seed-2
/// tables' files have always had the tight one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderRule {
    Spaced,
    Tight,
}

/// A table: its columns and rows of cells, one per column.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table of these columns and no rows yet.
    pub(crate) fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    /// The columns a reader reads, by index.
    fn read(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.columns.len()).filter(|&i| self.columns[i].shown != Shown::Csv)
    }

    /// The columns a reader reads.
    pub(crate) fn shown(&self) -> Vec<&Column> {
        self.read().map(|i| &self.columns[i]).collect()
    }

    /// The columns a reader reads at these indexes (of [`Table::shown`]), in the order given.
    pub(crate) fn pick(self, ix: &[usize]) -> Table {
        let read: Vec<usize> = self.read().collect();
        let keep: Vec<usize> = ix.iter().filter_map(|&i| read.get(i).copied()).collect();
        let row = |r: &Vec<Cell>| keep.iter().map(|&i| r[i].clone()).collect();
        Table {
            columns: keep.iter().map(|&i| self.columns[i].clone()).collect(),
            rows: self.rows.iter().map(row).collect(),
        }
    }

    /// The titles of the columns a reader reads.
    pub(crate) fn header(&self) -> Vec<String> {
        self.read().map(|i| self.columns[i].title.clone()).collect()
    }

    /// The rows as a reader reads them.
    pub(crate) fn read_rows(&self) -> Vec<Vec<String>> {
        (self.rows.iter())
            .map(|r| self.read().map(|i| r[i].read.clone()).collect())
            .collect()
    }

    /// The terminal table: rounded corners, the header, then the rows.
    pub(crate) fn terminal(&self) -> tabled::Table {
        let mut b = tabled::builder::Builder::new();
        b.push_record(self.header());
        for r in self.read_rows() {
            b.push_record(r);
        }
        let mut t = b.build();
        t.with(tabled::settings::Style::rounded());
        t
    }

    /// The Markdown table: the header, the alignment rule, the rows; `|` escaped and line
    /// breaks made spaces, so no cell breaks the table.
    pub(crate) fn markdown(&self, rule: HeaderRule) -> String {
        let escaped = |cells: Vec<String>| -> String {
            let cells: Vec<String> = (cells.iter())
                .map(|c| c.replace('|', "\\|").replace('\n', " "))
                .collect();
            format!("| {} |\n", cells.join(" | "))
        };
        let aligns = self.read().map(|i| match self.columns[i].left {
            true => "---",
            false => "---:",
        });
        let aligns: Vec<&str> = aligns.collect();
        let rule = match rule {
            HeaderRule::Spaced => format!("| {} |\n", aligns.join(" | ")),
            HeaderRule::Tight => format!("|{}|\n", aligns.join("|")),
        };
        let mut out = escaped(self.header()) + &rule;
        out.extend(self.read_rows().into_iter().map(escaped));
        out
    }

    /// The CSV: a header row, then each row, each led by whose figures they are (`figures`:
    /// `stand-in` or `mongodb`, so the marker survives any spreadsheet).
    pub(crate) fn csv(&self, standin: bool) -> String {
        let figures = if standin { "stand-in" } else { "mongodb" };
        let csv: Vec<usize> = (0..self.columns.len())
            .filter(|&i| self.columns[i].shown != Shown::Read)
            .collect();
        let line = |first: &str, fields: Vec<&str>| format!("{first},{}\n", fields.join(","));
        let names = csv.iter().map(|&i| self.columns[i].csv.as_str()).collect();
        let mut out = line("figures", names);
        for r in &self.rows {
            out.push_str(&line(
                figures,
                csv.iter().map(|&i| r[i].csv.as_str()).collect(),
            ));
        }
        out
    }
}

/// A CSV field, quoted when it holds a separator, a quote or a line break.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new(vec![
            Column::words("name", "name"),
            Column::figures("ops/s", "throughput_ops_s"),
            Column::words("", "raw_only").csv_only(),
            Column::words("mark", "").read_only(),
        ]);
        t.rows.push(vec![
            Cell::text("a|b"),
            Cell::figure("1,235", "1234.500"),
            Cell::quoted(""),
            Cell::text("max"),
        ]);
        t
    }

    #[test]
    fn each_writer_prints_its_columns_and_its_side_of_each_cell() {
        let t = table();
        assert_eq!(
            t.markdown(HeaderRule::Spaced),
            "| name | ops/s | mark |\n| --- | ---: | --- |\n| a\\|b | 1,235 | max |\n"
        );
        assert!(t.markdown(HeaderRule::Tight).contains("\n|---|---:|---|\n"));
        assert_eq!(
            t.csv(false),
            "figures,name,throughput_ops_s,raw_only\nmongodb,a|b,1234.500,\"\"\n"
        );
        let terminal = t.terminal().to_string();
        assert!(terminal.contains("│ a|b  │ 1,235 │ max  │"), "{terminal}");
    }
}
