//! `seqgpt extract-text FILE.pdf [--pages A-B] [--password P]`.

#[derive(clap::Args, Debug)]
pub struct ExtractTextArgs {
    /// The PDF file to read.
    pub file: std::path::PathBuf,
}

pub fn run(_args: ExtractTextArgs) -> anyhow::Result<()> {
    anyhow::bail!("extract-text is not built yet")
}
