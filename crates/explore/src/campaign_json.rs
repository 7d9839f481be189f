//! The JSON shapes `locksim campaign --json` and `locksim merge --json` print for campaign
//! cells: `{"cells": [...]}` for the matrix, `{"campaigns": [...]}` for campaign files
//! (each cell as [`CellSummary`] serializes).

use crate::CellSummary;

/// `{"cells": [...]}` (and `"missing"` for a partial merge), cells in their field order.
#[derive(serde::Serialize)]
pub struct Cells<'a> {
    /// The cells, in cell order.
    pub cells: &'a [CellSummary],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    /// What a partial merge lacks.
    pub missing: &'a [String],
}

/// One campaign file's result in `{"campaigns": [...]}`.
#[derive(serde::Serialize)]
pub struct FileResult {
    /// The campaign file's `name`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its path.
    pub file: String,
    /// Its cells.
    pub cells: Vec<CellSummary>,
    /// Its expectations held.
    pub ok: bool,
    /// The expectations that failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Why it was not judged, when it was not (one shard, a partial merge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// What a partial merge lacks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

#[derive(serde::Serialize)]
/// `{"campaigns": [...]}`.
pub struct Campaigns<'a> {
    /// One per campaign file.
    pub campaigns: &'a [FileResult],
}

/// `v` as one line of JSON.
pub fn to_json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("summaries serialize")
}
