"""torch.optim for the PyTorch references (train_reference.py and the tools
that import it, optim_reference.py): one constructor for every --optimizer
of Parallax, with torch's single-tensor step (foreach=False), the
semantics runtime/optim/ follows (docs/training.md, "Optimizers")."""


def make(kind, params, lr, momentum=0.9, nesterov=False, beta1=0.9, beta2=0.999, epsilon=1e-8,
         alpha=0.99, weight_decay=0.0):
    """kind: sgd, momentum (dampening 0, [nesterov]), adam, adagrad (lr_decay
    0, initial accumulator 0), adamw, rmsprop. params: tensors or groups."""
    import torch
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, foreach=False)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, dampening=0,
                               nesterov=bool(nesterov), weight_decay=weight_decay, foreach=False)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, betas=(beta1, beta2), eps=epsilon,
                                weight_decay=weight_decay, foreach=False)
    if kind == "adagrad":
        return torch.optim.Adagrad(params, lr=lr, lr_decay=0, weight_decay=weight_decay,
                                   initial_accumulator_value=0, eps=epsilon, foreach=False)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=(beta1, beta2), eps=epsilon,
                                 weight_decay=weight_decay, foreach=False)
    if kind == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, alpha=alpha, eps=epsilon,
                                   weight_decay=weight_decay, foreach=False)
    raise ValueError("unknown optimizer %r" % kind)
