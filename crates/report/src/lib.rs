//! The report: `report.html` with inline SVG plots, `summary.json`, CSV
//! tables, the probe traces, `timeline.json` and pcapng captures
//! (DESIGN.md, "Analysis and report").

pub mod capture;
pub mod compare_html;
mod cost_centres;
mod families;
pub mod html;
mod kernel_html;
pub mod kernel_runs;
mod layers_compared;
mod machine_html;
pub mod model;
mod pipeline_html;
pub mod plot;
mod protocol_delay_html;
pub mod published;
pub mod queues_html;
pub mod summary;
mod summary_html;
mod sweep_html;
pub mod tables;
mod toc;
mod trace_charts;
mod tunnel_flavours_html;
mod tunnel_html;
pub mod units;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub use model::Report;

/// A file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("writing {path}: {message}")]
pub struct WriteError {
    pub path: PathBuf,
    pub message: String,
}

fn create(path: &Path) -> Result<BufWriter<File>, WriteError> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| WriteError {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

fn finish(path: &Path, result: std::io::Result<()>) -> Result<(), WriteError> {
    result.map_err(|e| WriteError {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Writes `summary.json`, `report.html` and each run's CSV tables into
/// `dir` (which exists). The runs' `files` name the CSVs.
pub fn write(dir: &Path, report: &Report) -> Result<(), WriteError> {
    let path = dir.join("summary.json");
    let mut out = create(&path)?;
    finish(
        &path,
        serde_json::to_writer_pretty(&mut out, report)
            .map_err(std::io::Error::other)
            .and_then(|()| out.flush()),
    )?;
    for exp in &report.experiments {
        for run in &exp.runs {
            let path = dir.join(&run.files.sizes_csv);
            let mut out = create(&path)?;
            finish(
                &path,
                tables::write_sizes(run, &mut out).and_then(|()| out.flush()),
            )?;
            let path = dir.join(&run.files.cpu_csv);
            let mut out = create(&path)?;
            finish(
                &path,
                tables::write_cpu(run, &mut out).and_then(|()| out.flush()),
            )?;
        }
    }
    let path = dir.join("report.html");
    let mut out = create(&path)?;
    finish(
        &path,
        out.write_all(html::render(report).as_bytes())
            .and_then(|()| out.flush()),
    )
}
