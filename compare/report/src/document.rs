//! What every format of a report renders from, and the trait each format
//! implements. A format reads the results file's data only: the same
//! results give the same bytes.

use std::cell::OnceCell;

use anyhow::Result;

use super::grid::{Grid, View};
use super::sections::report_sections;
use model::results::Results;

/// A run's results, ready to render.
pub struct Document<'a> {
    pub results: &'a Results,
    /// The tables of each workload.
    pub views: Vec<View<'a>>,
    /// The implementation relative tables divide by.
    pub reference: String,
    /// The charts, when a format asked for them.
    pub charts: Vec<Chart>,
    /// Whether the charts are written as files beside the report (which
    /// the markdown then shows).
    pub charts_written: bool,
    /// The sections of tables, made once for every format that shows them.
    sections: OnceCell<Vec<(String, Vec<Grid>)>>,
}

impl<'a> Document<'a> {
    pub fn new(
        results: &'a Results,
        views: Vec<View<'a>>,
        reference: String,
        charts: Vec<Chart>,
        charts_written: bool,
    ) -> Self {
        Self {
            results,
            views,
            reference,
            charts,
            charts_written,
            sections: OnceCell::new(),
        }
    }

    /// The report's sections in order: heading and tables.
    pub fn sections(&self) -> &[(String, Vec<Grid>)] {
        self.sections
            .get_or_init(|| report_sections(&self.views, &self.reference))
    }
}

/// One chart: its file name, a caption, and the SVG.
pub struct Chart {
    pub file: String,
    pub caption: String,
    pub svg: String,
}

/// One format of a report: the files it writes, by name.
pub trait Export {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>>;
}
