//! What every format of a report renders from, and the trait each format
//! implements. A format reads the results file's data only: the same
//! results give the same bytes.

use anyhow::Result;

use super::grid::View;
use crate::results::Results;

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
