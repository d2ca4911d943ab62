//! A box in PDF user space (points, y up, as the summary's anchors give them) in the page
//! coordinates readers draw in: points from the top left corner of the page as it is shown,
//! that is of its visible area (CropBox) turned by its /Rotate, as poppler renders it (zathura,
//! Evince, pdftoppm): where a sentence lands on a reader's screen.

use seqgpt_pdf::PageGeometry;

/// `b` = (x0, y0, x1, y1) in user space -> (left, top, right, bottom) on the shown page.
pub fn to_page(b: [f32; 4], g: &PageGeometry) -> [f64; 4] {
    let [ax0, ay0, ax1, ay1] = g.area.map(f64::from);
    let (w, h) = (ax1 - ax0, ay1 - ay0);
    // The corners relative to the visible area, y still up.
    let (u0, u1) = (f64::from(b[0]) - ax0, f64::from(b[2]) - ax0);
    let (v0, v1) = (f64::from(b[1]) - ay0, f64::from(b[3]) - ay0);
    let (l, t, r, bt) = match g.rotate {
        // Turned clockwise: user space's bottom edge comes to the left.
        90 => (v0, u0, v1, u1),
        180 => (w - u1, v0, w - u0, v1),
        270 => (h - v1, w - u1, h - v0, w - u0),
        _ => (u0, h - v1, u1, h - v0),
    };
    [l, t, r, bt]
}

/// The shown page's width and height in points.
pub fn page_size(g: &PageGeometry) -> (f64, f64) {
    let (w, h) = (f64::from(g.area[2] - g.area[0]), f64::from(g.area[3] - g.area[1]));
    if g.rotate % 180 == 90 {
        (h, w)
    } else {
        (w, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(area: [f32; 4], rotate: u16) -> PageGeometry {
        PageGeometry { number: 1, area, rotate }
    }

    #[test]
    fn an_upright_page_flips_y_from_its_visible_area() {
        // A line near the top of a cropped page whose area starts at (100, 200).
        let p = to_page([110.0, 950.0, 300.0, 962.0], &g([100.0, 200.0, 712.0, 992.0], 0));
        assert_eq!(p, [10.0, 30.0, 200.0, 42.0]);
    }

    #[test]
    fn each_quarter_turn_keeps_the_box_on_the_shown_page() {
        let area = [0.0, 0.0, 600.0, 800.0];
        let b = [100.0, 700.0, 300.0, 712.0];
        // Turned clockwise, the page's top edge is on the right: the line near the top
        // becomes a column near the right edge, read downwards.
        assert_eq!(to_page(b, &g(area, 90)), [700.0, 100.0, 712.0, 300.0]);
        assert_eq!(to_page(b, &g(area, 180)), [300.0, 700.0, 500.0, 712.0]);
        assert_eq!(to_page(b, &g(area, 270)), [88.0, 300.0, 100.0, 500.0]);
        for r in [0, 90, 180, 270] {
            let (w, h) = page_size(&g(area, r));
            let p = to_page(b, &g(area, r));
            assert!(p[0] >= 0.0 && p[2] <= w && p[1] >= 0.0 && p[3] <= h && p[0] < p[2] && p[1] < p[3], "{r}: {p:?}");
        }
    }
}
