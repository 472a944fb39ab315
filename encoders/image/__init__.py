"""Images: checking and reading files at their depth (``reading.py``), image files as a dataset
(``files.py``), idx files (``idx.py``), batching, the pixel and patch encoders and CCT's
convolutional tokenizer (``tokenizer.py``)."""

from vecset.encoders.image.collate import collate_images
from vecset.encoders.image.encoder import PatchEncoder, PixelEncoder, conv_stem, make_positional_2d
from vecset.encoders.image.files import FileImages
from vecset.encoders.image.idx import read_idx, read_idx_split
from vecset.encoders.image.reading import (
    IMAGE_EXTENSIONS,
    check_image,
    check_images,
    image_channels,
    read_image,
)
from vecset.encoders.image.tokenizer import ConvTokenizer

__all__ = ["IMAGE_EXTENSIONS", "ConvTokenizer", "FileImages", "PatchEncoder", "PixelEncoder", "check_image",
           "check_images", "collate_images", "conv_stem", "image_channels", "make_positional_2d", "read_idx", "read_idx_split",
           "read_image"]
