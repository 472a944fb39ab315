"""Images: reading files at their depth, idx files, batching, and the pixel and patch encoders."""

from vecset.encoders.image.collate import collate_images
from vecset.encoders.image.encoder import PatchEncoder, PixelEncoder, conv_stem, make_positional_2d
from vecset.encoders.image.idx import read_idx
from vecset.encoders.image.reading import IMAGE_EXTENSIONS, read_image

__all__ = ["IMAGE_EXTENSIONS", "PatchEncoder", "PixelEncoder", "collate_images", "conv_stem", "make_positional_2d",
           "read_idx", "read_image"]
