"""The `membrane correct|corrections|preferences|feedback` command lines."""
