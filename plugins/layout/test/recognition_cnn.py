#!/usr/bin/python3
"""A small recognition-style CNN (text-line recognizer shape) at batch 4 and
a 48x640 input, exported with PyTorch, with its input and PyTorch's output.

Its first feature map, 4x104x48x640, needs an image 26*640 = 16640 texels
wide with the channels packed, beyond lavapipe's (and most devices') 16384:
that tensor must stay a buffer under --storage image and auto, while the
smaller ones may be images (issue 15: an OCR model at batch 4 used to refuse
image storage outright). Random seeded weights, nothing downloaded.

Usage: recognition_cnn.py OUT_DIR   (writes model.onnx, input.npy, output.npy)
"""
import os
import sys
import warnings


def main(out):
    import numpy as np
    import torch

    torch.manual_seed(15)

    class Recognizer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 104, 1)
            self.pool = torch.nn.MaxPool2d(4)
            self.head = torch.nn.Conv2d(104, 8, 3, padding=1)
            self.classes = torch.nn.Linear(8, 10)

        def forward(self, x):
            x = torch.relu(self.stem(x))     # 4x104x48x640: 26*640 texels wide, too wide for an image
            x = self.pool(x)                 # 4x104x12x160
            x = self.head(x).mean(dim=2)     # 4x8x160: the sequence
            x = self.classes(x.transpose(1, 2))  # 4x160x10: per-column logits
            return torch.log_softmax(x, dim=-1)

    model = Recognizer().eval()
    x = torch.randn(4, 3, 48, 640)
    os.makedirs(out, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"), opset_version=17, input_names=["input"],
                          output_names=["output"])
    with torch.no_grad():
        y = model(x)
    np.save(os.path.join(out, "input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(out, "output.npy"), y.numpy().astype(np.float32))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
