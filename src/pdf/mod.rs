//! PDF text extraction on lopdf's parser.
