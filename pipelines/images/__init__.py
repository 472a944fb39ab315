"""Image classification: the data modules (digits, image folders, CIFAR-10, Fashion-MNIST), the reports."""
