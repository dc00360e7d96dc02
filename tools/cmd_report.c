/* placeholder: replaced by its owning change */
#include "cli.h"
