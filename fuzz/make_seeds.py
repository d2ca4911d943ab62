#!/usr/bin/env python3
"""Write small synthetic seed PDFs for the fuzzer into fuzz/seeds/ (committed), and variants made
with qpdf (object streams, xref streams, encryption) when qpdf is installed.

usage: python3 fuzz/make_seeds.py
"""
import os, shutil, subprocess, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "seeds")


def pdf(objs, root=1):
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offs = []
    for i, o in enumerate(objs, 1):
        offs.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    x = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offs:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root %d 0 R /ID [<0011> <0011>] >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, root, x)
    return bytes(out)


def stream(dict_src, data, flate=False):
    if flate:
        data = zlib.compress(data)
        dict_src += b" /Filter /FlateDecode"
    return b"<< " + dict_src + b" /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def page_doc(font, content, extra=(), flate=False, res_extra=b""):
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> " + res_extra + b" >> /Contents 4 0 R >>",
        stream(b"", content, flate),
        font,
    ]
    objs.extend(extra)
    return pdf(objs)


TU = b"""/CIDInit /ProcSet findresource begin 12 dict begin begincmap
1 begincodespacerange <0000> <FFFF> endcodespacerange
2 beginbfchar <0001> <4E2D> <0002> <D840DC00> endbfchar
1 beginbfrange <0010> <0020> <0041> endbfrange endcmap end end"""

SEEDS = {
    "helvetica_tj.pdf": page_doc(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"BT /F1 12 Tf 72 700 Td [(Hel) -20 (lo) -300 (world)] TJ 0 -14 Td 5 Tw (wide words\\223) Tj T* (hy-) ' ET"),
    "differences_flate.pdf": page_doc(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Foo /FirstChar 65 /LastChar 67 /Widths [500 500 500] "
        b"/Encoding << /BaseEncoding /MacRomanEncoding /Differences [65 /uni4E2D /f_i /g12] >> >>",
        b"BT /F1 12 Tf 1 0 0 1 72 700 Tm (ABC\\216) Tj ET", flate=True),
    "type0_tounicode.pdf": page_doc(
        b"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /DescendantFonts [6 0 R] /ToUnicode 7 0 R >>",
        b"BT /F1 12 Tf 72 700 Td <000100020010> Tj ET",
        extra=[b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /X /CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 0 >> /DW 1000 /W [16 [500 600] 20 30 400] >>",
               stream(b"", TU)]),
    "gbk_vertical.pdf": page_doc(
        b"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /GBK-EUC-V /DescendantFonts [6 0 R] >>",
        b"BT /F1 12 Tf 300 700 Td (Hi\\326\\320) Tj ET",
        extra=[b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /X /CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 0 >> /DW2 [880 -1000] /W2 [1 [-500 250 880]] >>"]),
    "type3_form.pdf": page_doc(
        b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 10 10] /FontMatrix [0.01 0 0 0.01 0 0] /CharProcs << >> "
        b"/Encoding << /Differences [97 /a /#2323 /m] >> /FirstChar 97 /LastChar 99 /Widths [50 50 60] >>",
        b"q 1 0 0 1 10 10 cm /X1 Do Q BT /F1 10 Tf 72 700 Td (abc) Tj ET",
        extra=[stream(b"/Type /XObject /Subtype /Form /BBox [0 0 100 100] /Matrix [1 0 0 1 5 5] /Resources << /Font << /F1 5 0 R >> /XObject << /X1 6 0 R >> >>",
                      b"BT /F1 10 Tf (in form) Tj ET /X1 Do")],
        res_extra=b"/XObject << /X1 6 0 R >>"),
    "inline_image.pdf": page_doc(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>",
        b"BI /W 2 /H 2 /BPC 8 /CS /G ID \x00\xffEI\x01\x02 EI\nBT /F1 9 Tf 0 1 -1 0 100 100 Tm (abg) Tj ET"),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    if shutil.which("qpdf"):
        src = os.path.join(OUT, "helvetica_tj.pdf")
        variants = {
            "objstm.pdf": ["--object-streams=generate"],
            "rc4_empty_user.pdf": ["--allow-weak-crypto", "--encrypt", "", "owner", "128", "--use-aes=n", "--"],
            "aes_user_pw.pdf": ["--encrypt", "pw", "owner", "128", "--use-aes=y", "--"],
        }
        for name, args in variants.items():
            subprocess.run(["qpdf", "--static-id"] + args + [src, os.path.join(OUT, name)], check=False)
    print("seeds:", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
