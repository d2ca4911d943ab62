//! Showing a summary in the reader a person already uses: what a reader plugin needs, in one
//! place, whatever the reader.
//!
//! - [`annotated`]: the summary as annotations of a copy of the PDF (a highlight on each
//!   sentence, a note with the whole summary), which every PDF reader shows;
//! - [`geometry`]: a sentence's boxes (PDF user space, y up) in a reader's page coordinates
//!   (origin at the top left of the page as shown: crop box and rotation applied);
//! - [`zathura`]: zathura over its D-Bus interface (find the instance that has a file open,
//!   start one, make it show the annotated copy, go to a page; never its HighlightRects,
//!   which can crash it);
//! - [`launch`]: the readers found on this machine, and opening a file in one at a page.

pub mod annotated;
pub mod geometry;
pub mod launch;
pub mod zathura;
