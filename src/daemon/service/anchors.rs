//! A summary sentence's anchor as the bus carries it, `(suuua(dddd))`: text, page, start and
//! end (characters of the page's extracted text), boxes (x0, y0, x1, y1 in PDF user space;
//! docs/DBUS.md). One type both ways: the service writes it ([`to_wire`]), clients read it
//! back ([`from_wire`], [`from_value`] for the `anchors` entry of a stats dictionary).

use super::bus_string::BusString;
use crate::summarize::Anchor;
use zbus::zvariant::Value;

/// The wire form; the service sends [`BusString`] text, clients read it as `String`.
pub type WireAnchor<S = String> = (S, u32, u32, u32, Vec<(f64, f64, f64, f64)>);

/// Anchors as they go on the bus.
pub fn to_wire(anchors: &[Anchor]) -> Vec<WireAnchor<BusString>> {
    anchors
        .iter()
        .map(|a| {
            let boxes = a.boxes.iter().map(|b| (f64::from(b[0]), f64::from(b[1]), f64::from(b[2]), f64::from(b[3]))).collect();
            (BusString::text(&a.text), a.page, a.start, a.end, boxes)
        })
        .collect()
}

/// Anchors as the bus brought them.
pub fn from_wire(list: Vec<WireAnchor>) -> Vec<Anchor> {
    list.into_iter()
        .map(|(text, page, start, end, boxes)| Anchor {
            text,
            page,
            start,
            end,
            boxes: boxes.into_iter().map(|(a, b, c, d)| [a as f32, b as f32, c as f32, d as f32]).collect(),
        })
        .collect()
}

/// The `anchors` entry of a stats dictionary (Finished, the Stats property): empty when it is
/// of another type.
pub fn from_value(v: &Value<'_>) -> Vec<Anchor> {
    let Ok(v) = v.try_clone() else { return Vec::new() };
    Vec::<WireAnchor>::try_from(v).map(from_wire).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_come_back_as_they_went() {
        let a = vec![Anchor { text: "One sentence.".into(), page: 2, start: 5, end: 18, boxes: vec![[1.5, 2.0, 30.25, 12.0]] }];
        let sent = Value::from(to_wire(&a));
        assert_eq!(from_value(&sent), a);
        assert!(from_value(&Value::from(7u32)).is_empty());
    }
}
