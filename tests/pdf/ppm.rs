//! RGB images in binary PPM (P6), as pdftoppm and ImageMagick's convert write them: what the
//! pixel tests read.

pub struct Image {
    pub w: usize,
    pub h: usize,
    pub rgb: Vec<u8>,
}

impl Image {
    /// P6, width, height, 255 (comments between them skipped), one whitespace byte, then
    /// the pixels.
    pub fn parse(bytes: &[u8]) -> Image {
        let mut fields = Vec::new();
        let mut i = 0;
        while fields.len() < 4 {
            while bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if bytes[i] == b'#' {
                // A comment (convert writes the source's name), to the end of its line.
                while bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            let s = i;
            while !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            fields.push(String::from_utf8_lossy(&bytes[s..i]).into_owned());
        }
        assert_eq!(fields[0], "P6", "not a binary PPM");
        assert_eq!(fields[3], "255", "not 8 bits per channel");
        let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
        let rgb = bytes[i + 1..].to_vec();
        assert_eq!(rgb.len(), 3 * w * h, "a truncated image");
        Image { w, h, rgb }
    }

    pub fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = 3 * (y * self.w + x);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    pub fn to_ppm(&self) -> Vec<u8> {
        let mut out = format!("P6\n{} {}\n255\n", self.w, self.h).into_bytes();
        out.extend_from_slice(&self.rgb);
        out
    }
}
